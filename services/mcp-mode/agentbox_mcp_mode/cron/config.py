"""Cron mode's configuration: ``AICODEBOX_CRON_MODE_*`` variables and the YAML job file.

The job file (``AICODEBOX_CRON_MODE_FILE``, required) has top-level defaults (``model``,
``system_prompt``, ``append_system_prompt``, ``telegram_chat_id``, ``effort``, ``thinking``) and
``jobs``: each with ``name`` (``[A-Za-z0-9_-]+``, unique), ``schedule`` (5 fields, or 6 with
seconds first), ``instruction``, and optionally ``workspace`` (default ``.``, under
``AICODEBOX_WORKSPACE``), ``no_continue`` (default false) and the defaults' keys, which win over
the top level. ``telegram_chat_id: 0`` on a job opts it out of the top-level chat.

Everything is checked at start-up: a missing file, bad YAML, an unknown key, a bad schedule or a
duplicate name is a :class:`~agentbox_common.settings.ConfigError` naming the file and the problem.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentbox_common.settings import ConfigError, env_str, home_path, read_env, setting, stripped

from ..telegram_bot.client import DEFAULT_API_URL, telegram_api_url

JOB_NAME = r"^[A-Za-z0-9_-]+$"


def seconds_first(schedule: str) -> bool:
    """True for a 6-field schedule (seconds first), False for the classic 5 fields."""
    return len(schedule.split()) == 6


class _Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    telegram_chat_id: int | None = None
    effort: str | None = None
    thinking: str | None = None


class CronJob(_Defaults):
    name: str = Field(pattern=JOB_NAME)
    schedule: str
    instruction: str = Field(min_length=1)
    workspace: str = "."
    no_continue: bool = False

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        fields = len(value.split())
        if fields not in (5, 6) or not croniter.is_valid(value, second_at_beginning=fields == 6):
            raise ValueError(f"invalid schedule {value!r}: use 5 cron fields, or 6 with seconds first")
        return value

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str) -> str:
        pure = PurePosixPath(value)
        if pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"workspace {value!r} must be a path under AICODEBOX_WORKSPACE")
        return value


class CronFile(_Defaults):
    jobs: list[CronJob] = Field(min_length=1)


@dataclass(frozen=True)
class ResolvedJob:
    """A job with the top-level defaults applied: what one tick runs."""

    name: str
    schedule: str
    instruction: str
    #: Subpath of the workspace root; ``""`` is the root itself.
    workspace: str
    model: str
    system_prompt: str
    append_system_prompt: str
    thinking: str
    no_continue: bool
    #: The chat notified of each result, or None.
    telegram_chat_id: int | None


def _resolve(job: CronJob, top: CronFile) -> ResolvedJob:
    def pick(key: str) -> Any:
        value = getattr(job, key)
        return getattr(top, key) if value is None else value

    chat = pick("telegram_chat_id")
    workspace = PurePosixPath(job.workspace).as_posix()
    return ResolvedJob(
        name=job.name,
        schedule=job.schedule,
        instruction=job.instruction,
        workspace="" if workspace == "." else workspace,
        model=pick("model") or "",
        system_prompt=pick("system_prompt") or "",
        append_system_prompt=pick("append_system_prompt") or "",
        thinking=job.thinking or job.effort or top.thinking or top.effort or "",
        no_continue=job.no_continue,
        telegram_chat_id=chat or None,
    )


def _problem(error: ValidationError) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def load_jobs(path: Path) -> list[ResolvedJob]:
    """The jobs of ``path``, defaults applied; ConfigError naming the file and the problem."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"AICODEBOX_CRON_MODE_FILE: {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"AICODEBOX_CRON_MODE_FILE: cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'jobs' list at the top level")
    try:
        parsed = CronFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_problem(exc)}") from None
    names = [job.name for job in parsed.jobs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"{path}: job names must be unique; repeated: {', '.join(duplicates)}")
    return [_resolve(job, parsed) for job in parsed.jobs]


def history_dir(env: Mapping[str, str] | None = None) -> Path:
    """``AICODEBOX_CRON_MODE_HISTORY_DIR`` (default ``~/.aicodebox/cron``): all of cron's state."""
    raw = env_str("AICODEBOX_CRON_MODE_HISTORY_DIR", "", env).strip()
    return Path(raw).expanduser() if raw else Path.home() / ".aicodebox" / "cron"


@dataclass(frozen=True)
class CronSettings:
    #: The YAML job file.
    file: Path = setting(env="AICODEBOX_CRON_MODE_FILE", parse=home_path)
    #: All of cron's state (history, Telegram message index); read by :func:`history_dir`.
    history_dir: Path = setting(env="AICODEBOX_CRON_MODE_HISTORY_DIR", parse=None, shown="`~/.aicodebox/cron`")
    #: Needed only when a job notifies a chat.
    telegram_token: str = setting("", env="AICODEBOX_TELEGRAM_MODE_TOKEN", parse=stripped)
    #: Read by :func:`~agentbox_mcp_mode.telegram_bot.client.telegram_api_url`, which checks it.
    telegram_api_url: str = setting(DEFAULT_API_URL, env="AICODEBOX_TELEGRAM_MODE_API_URL", parse=None)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CronSettings:
        source = os.environ if env is None else env
        values = read_env(cls, source)
        if "file" not in values:
            raise ConfigError("AICODEBOX_CRON_MODE_FILE is not set: point it at the YAML job file")
        return cls(**values, history_dir=history_dir(source), telegram_api_url=telegram_api_url(source))

    def load(self) -> list[ResolvedJob]:
        """The job file's jobs; ConfigError also when a job notifies a chat but no token is set."""
        jobs = load_jobs(self.file)
        notifying = [job.name for job in jobs if job.telegram_chat_id is not None]
        if notifying and not self.telegram_token:
            raise ConfigError(
                f"{self.file}: jobs {', '.join(notifying)} notify a Telegram chat but "
                "AICODEBOX_TELEGRAM_MODE_TOKEN is not set"
            )
        return jobs
