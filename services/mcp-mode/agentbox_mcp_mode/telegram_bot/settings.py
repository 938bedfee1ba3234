"""Telegram mode's configuration: the ``AICODEBOX_TELEGRAM_MODE_*`` variables, ``telegram.yml``
and the runtime overrides file.

* ``AICODEBOX_TELEGRAM_MODE_TOKEN`` (required), ``AICODEBOX_TELEGRAM_MODE_API_URL`` (default
  ``https://api.telegram.org``), ``AICODEBOX_TELEGRAM_MODE_CONFIG`` (default
  ``~/.aicodebox/telegram.yml``), ``AICODEBOX_TELEGRAM_MODE_OVERRIDES`` (default
  ``~/.aicodebox/telegram_overrides.json``), ``AICODEBOX_AVAILABLE_MODELS`` /
  ``AICODEBOX_AVAILABLE_EFFORTS`` for the ``/model`` and ``/effort`` pickers.
* ``telegram.yml``: ``allowed_chats: [ids]``, ``default: {model, continue, workspace,
  system_prompt, append_system_prompt, effort | thinking}`` and ``chats: {<id>: {… ,
  allowed_users: [ids]}}``; a chat is allowed when listed in either. Without the file the one
  allowed chat is ``TELEGRAM_CHAT_ID`` (comma-separated ids accepted).
* A chat's settings merge default < chat < runtime overrides (``/model``, ``/effort``,
  ``/system_prompt``, ``/append_system_prompt``), which are written atomically so a crash never
  leaves a torn file. The default workspace is ``chat_<abs(chat id)>``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentbox_common.settings import ConfigError, csv_or_empty, env_str, home_path, read_env, setting, stripped

from ..adapters.sessions import _write_atomic
from .client import DEFAULT_API_URL, telegram_api_url

#: Words that clear an override (``/model reset``).
RESET_WORDS = frozenset({"__reset__", "default", "reset", "clear", "none"})
DEFAULT_EFFORTS = ("low", "medium", "high")
OVERRIDABLE = ("model", "effort", "system_prompt", "append_system_prompt")


class TokenMissing(ConfigError):
    """``AICODEBOX_TELEGRAM_MODE_TOKEN`` is not set (aicodebox's message, exit status 1)."""


class _ChatFields(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    model: str | None = None
    continue_session: bool | None = Field(default=None, alias="continue")
    workspace: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    effort: str | None = None
    thinking: str | None = None


class _Chat(_ChatFields):
    allowed_users: list[int] | None = None


class _TelegramFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allowed_chats: list[int] = Field(default_factory=list)
    default: _ChatFields = Field(default_factory=_ChatFields)
    chats: dict[int, _Chat] = Field(default_factory=dict)


@dataclass(frozen=True)
class ChatSettings:
    """What one chat's runs use, after the merge."""

    model: str = ""
    continue_session: bool = True
    workspace: str = ""
    system_prompt: str = ""
    append_system_prompt: str = ""
    effort: str = ""
    #: None: every member of the chat may use the bot.
    allowed_users: frozenset[int] | None = None

    def describe(self) -> str:
        return "\n".join(
            [
                f"workspace: {self.workspace}",
                f"model: {self.model or '(default)'}",
                f"effort: {self.effort or '(default)'}",
                f"continue: {'yes' if self.continue_session else 'no'}",
                f"system_prompt: {self.system_prompt or '(none)'}",
                f"append_system_prompt: {self.append_system_prompt or '(none)'}",
            ]
        )


@dataclass(frozen=True)
class ChatRules:
    """The allowed chats and their settings before runtime overrides."""

    allowed: frozenset[int]
    default: _ChatFields = field(default_factory=_ChatFields)
    chats: Mapping[int, _Chat] = field(default_factory=dict)

    def settings(self, chat_id: int, overrides: Mapping[str, str]) -> ChatSettings | None:
        """The chat's merged settings, or None when it is not allowed."""
        if chat_id not in self.allowed:
            return None
        merged = ChatSettings(workspace=f"chat_{abs(chat_id)}")
        chat = self.chats.get(chat_id)
        for layer in (self.default, chat):
            if layer is None:
                continue
            dumped = layer.model_dump(exclude={"allowed_users", "thinking"})
            values: dict[str, Any] = {k: v for k, v in dumped.items() if v is not None}
            if layer.thinking and not layer.effort:
                values["effort"] = layer.thinking
            merged = replace(merged, **values)
        picked: dict[str, Any] = {k: v for k, v in overrides.items() if k in OVERRIDABLE}
        merged = replace(merged, **picked)
        if chat is not None and chat.allowed_users is not None:
            merged = replace(merged, allowed_users=frozenset(chat.allowed_users))
        return merged


def _csv_ids(raw: str, name: str) -> frozenset[int]:
    try:
        return frozenset(int(part) for part in raw.split(",") if part.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a chat id (an integer), got {raw!r}") from None


def load_rules(path: Path, env: Mapping[str, str]) -> ChatRules:
    """``telegram.yml`` when it exists, else ``TELEGRAM_CHAT_ID``; ConfigError naming the problem."""
    if not path.exists():
        return ChatRules(allowed=_csv_ids(env_str("TELEGRAM_CHAT_ID", "", env), "TELEGRAM_CHAT_ID"))
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        parsed = _TelegramFile.model_validate(raw)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{path}: {location}: {first['msg']}") from None
    return ChatRules(
        allowed=frozenset(parsed.allowed_chats) | frozenset(parsed.chats), default=parsed.default, chats=parsed.chats
    )


class Overrides:
    """Per-chat runtime overrides, kept in a JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._data: dict[str, dict[str, str]] = {}
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self._data = {str(k): dict(v) for k, v in loaded.items() if isinstance(v, dict)}
        except (OSError, ValueError):
            pass

    def of(self, chat_id: int) -> dict[str, str]:
        return dict(self._data.get(str(chat_id), {}))

    def set(self, chat_id: int, key: str, value: str | None) -> None:
        """Set ``key`` for the chat; None (or a reset word) removes it."""
        chat = self._data.setdefault(str(chat_id), {})
        if value is None or value.strip().lower() in RESET_WORDS:
            chat.pop(key, None)
        else:
            chat[key] = value
        _write_atomic(self.path, json.dumps(self._data, indent=2, ensure_ascii=False))


def _home_file(name: str) -> Path:
    return Path.home() / ".aicodebox" / name


def _efforts(name: str, raw: str) -> tuple[str, ...] | None:
    return csv_or_empty(name, raw) or None


@dataclass(frozen=True)
class TelegramSettings:
    token: str = setting(env="AICODEBOX_TELEGRAM_MODE_TOKEN", parse=stripped)
    #: Read by :func:`~.client.telegram_api_url`, which checks it.
    api_url: str = setting(DEFAULT_API_URL, env="AICODEBOX_TELEGRAM_MODE_API_URL", parse=None)
    config_path: Path = setting(
        default_factory=lambda: _home_file("telegram.yml"),
        env="AICODEBOX_TELEGRAM_MODE_CONFIG",
        parse=home_path,
        shown="`~/.aicodebox/telegram.yml`",
    )
    overrides_path: Path = setting(
        default_factory=lambda: _home_file("telegram_overrides.json"),
        env="AICODEBOX_TELEGRAM_MODE_OVERRIDES",
        parse=home_path,
        shown="`~/.aicodebox/telegram_overrides.json`",
    )
    available_models: tuple[str, ...] = setting((), env="AICODEBOX_AVAILABLE_MODELS", parse=csv_or_empty)
    available_efforts: tuple[str, ...] = setting(
        DEFAULT_EFFORTS, env="AICODEBOX_AVAILABLE_EFFORTS", parse=_efforts, shown="`low,medium,high`"
    )
    #: Exactly ``1``: cron runs inside the bot process.
    cron_mode: bool = setting(False, env="AICODEBOX_CRON_MODE", parse=lambda name, raw: raw == "1", shown="unset")
    env: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TelegramSettings:
        source = dict(os.environ if env is None else env)
        values = read_env(cls, source)
        if not values.get("token"):
            raise TokenMissing("AICODEBOX_TELEGRAM_MODE_TOKEN not set")
        return cls(**values, api_url=telegram_api_url(source), env=source)

    def rules(self) -> ChatRules:
        return load_rules(self.config_path, self.env)
