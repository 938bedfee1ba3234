"""Configuration of aicodebox's MCP mode (and the API mode built on it), read once from ``AICODEBOX_*``.

Names follow aicodebox exactly so users can move their configuration over unchanged. Everything
that can be wrong is checked here, so a bad value stops the program at start-up with a
:class:`~agentbox_common.settings.ConfigError` naming the variable (an empty
``AICODEBOX_MCP_MODE_ALLOWED_HOSTS`` included) instead of a half-working server.

Interface for API mode: ``McpModeSettings.from_env()`` gives everything MCP mode needs; API mode
reads its own ``AICODEBOX_API_MODE_*`` variables separately (the MCP token never falls back to the
API token, so nothing here reads ``AICODEBOX_API_MODE_TOKEN``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agentbox_common.keys import read_key_file
from agentbox_common.observability import ObservabilitySettings
from agentbox_common.settings import (
    ConfigError,
    boolean,
    csv,
    csv_or_empty,
    given,
    integer,
    nested,
    nonblank,
    number,
    path,
    port_number,
    read_env,
    setting,
    stripped,
)

from .schemas import DEFAULT_VALIDATION_TIMEOUT

DEFAULT_PORT = 8081
DEFAULT_ADAPTER = "claude"

#: Loopback Host values, with and without a port (the SDK's own defaults lack the bare forms).
DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
#: Loopback origins over http and https, with and without a port (a browser sends no port for 80/443).
DEFAULT_ALLOWED_ORIGINS = tuple(
    f"{scheme}://{host}{port}"
    for scheme in ("http", "https")
    for host in ("127.0.0.1", "localhost", "[::1]")
    for port in ("", ":*")
)
#: Agent runs at once in the whole process, across workspaces and surfaces.
DEFAULT_MAX_CONCURRENT_RUNS = 8
#: Largest ``PUT /files`` body.
DEFAULT_MAX_UPLOAD_BYTES = 1024 * 1024 * 1024


def _default_state_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agentbox-mcp-mode"


def _nonblank_path(name: str, raw: str) -> Path | None:
    return Path(raw.strip()) if raw.strip() else None


def _workspace_root(env: Mapping[str, str]) -> Path:
    """``AICODEBOX_WORKSPACE`` (fallback ``AICODE_WORKSPACE``), created when missing, symlinks resolved."""
    name = "AICODEBOX_WORKSPACE" if env.get("AICODEBOX_WORKSPACE") else "AICODE_WORKSPACE"
    raw = env.get(name) or "/workspace"
    path = Path(raw).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot create workspace {raw!r}: {exc.strerror or exc}") from None
    if not path.is_dir():
        raise ConfigError(f"{name}: {raw!r} is not a directory")
    return path.resolve()


def _base_url(name: str, raw: str) -> str | None:
    value = raw.strip()
    return value.rstrip("/") if value else None


@dataclass(frozen=True)
class McpModeSettings:
    #: Root every file path and run workspace is confined to (read by :func:`_workspace_root`, which
    #: creates it; ``AICODE_WORKSPACE`` is the fallback variable).
    workspace: Path = setting(env="AICODEBOX_WORKSPACE", parse=None, shown="`/workspace`")
    #: Whether MCP is on (API mode mounts it only then).
    mcp_mode: bool = setting(False, env="AICODEBOX_MCP_MODE", parse=boolean)
    host: str = setting("0.0.0.0", env="AICODEBOX_MCP_MODE_HOST", parse=nonblank)
    port: int = setting(DEFAULT_PORT, env="AICODEBOX_MCP_MODE_PORT", parse=port_number)
    #: Empty means MCP has no auth. The token itself, or ``sha256:<hex>``, its digest.
    token: str = setting("", env="AICODEBOX_MCP_MODE_TOKEN")
    #: A file holding the token (or its digest) instead of ``AICODEBOX_MCP_MODE_TOKEN``, read at start-up.
    token_file: Path | None = setting(None, env="AICODEBOX_MCP_MODE_TOKEN_FILE", parse=path)
    allowed_hosts: tuple[str, ...] = setting(
        DEFAULT_ALLOWED_HOSTS,
        env="AICODEBOX_MCP_MODE_ALLOWED_HOSTS",
        parse=csv,
        shown="`127.0.0.1`, `localhost`, `[::1]`, each with and without `:*`",
    )
    allowed_origins: tuple[str, ...] = setting(
        DEFAULT_ALLOWED_ORIGINS,
        env="AICODEBOX_MCP_MODE_ALLOWED_ORIGINS",
        parse=csv,
        shown="`http://` and `https://` on `127.0.0.1`, `localhost`, `[::1]`, each with and without `:*`",
    )
    #: ``claude``, ``codex``, ``openai`` or ``package.module:Class``.
    adapter: str = setting(DEFAULT_ADAPTER, env="AICODEBOX_ADAPTER", parse=nonblank)
    #: When non-empty, ``model`` must be one of these.
    available_models: tuple[str, ...] = setting((), env="AICODEBOX_AVAILABLE_MODELS", parse=csv_or_empty)
    #: Re-runs after an answer that does not match ``json_schema``.
    json_retries: int = setting(3, env="AICODEBOX_JSON_RETRIES", parse=integer(minimum=0, maximum=20))
    #: Seconds before a run's process group is killed.
    run_timeout: float = setting(3600.0, env="AICODEBOX_RUN_TIMEOUT", parse=number(minimum=0.1))
    #: Seconds matching one answer against ``json_schema`` may take.
    validation_timeout: float = setting(
        DEFAULT_VALIDATION_TIMEOUT, env="AICODEBOX_JSON_VALIDATION_TIMEOUT", parse=number(minimum=0.1)
    )
    #: Overrides the CLI adapters' executable (``claude`` / ``codex``).
    agent_binary: str = setting("", env="AICODEBOX_AGENT_BINARY", parse=stripped)
    #: The built-in agent's chat-completions endpoint.
    openai_base_url: str = setting("https://api.openai.com/v1", env="OPENAI_BASE_URL", parse=_base_url)
    openai_api_key: str = setting("", env="OPENAI_API_KEY")
    #: Model calls the built-in agent may make in one run.
    agent_max_turns: int = setting(50, env="AICODEBOX_AGENT_MAX_TURNS", parse=integer(minimum=1, maximum=1000))
    #: Agent runs at once across workspaces (more: refused).
    max_concurrent_runs: int = setting(
        DEFAULT_MAX_CONCURRENT_RUNS, env="AICODEBOX_MAX_CONCURRENT_RUNS", parse=integer(minimum=1, maximum=1000)
    )
    #: Largest ``PUT /files`` body (more: 413) and Telegram upload (more: refused in the chat).
    max_upload_bytes: int = setting(
        DEFAULT_MAX_UPLOAD_BYTES, env="AICODEBOX_MAX_UPLOAD_BYTES", parse=integer(minimum=1)
    )
    #: Where the built-in agent keeps its sessions (outside the workspace); the default follows
    #: ``XDG_STATE_HOME`` of the environment read.
    state_dir: Path = setting(
        default_factory=lambda: _default_state_dir(os.environ),
        env="AICODEBOX_STATE_DIR",
        parse=_nonblank_path,
        shown="`~/.local/state/agentbox-mcp-mode`",
    )
    #: ``AGENTBOX_METRICS``, ``AGENTBOX_ACCESS_LOG``: ``/metrics`` and the access log.
    observability: ObservabilitySettings = nested(ObservabilitySettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> McpModeSettings:
        """Settings from the environment; keyword overrides win when not None. Raises ConfigError."""
        source = os.environ if env is None else env
        computed = {"workspace": _workspace_root(source), "state_dir": _default_state_dir(source)}
        settings = cls(**{**computed, **read_env(cls, source), **given(overrides)})
        if settings.token_file is not None:
            if settings.token:
                raise ConfigError(
                    "AICODEBOX_MCP_MODE_TOKEN_FILE: set either AICODEBOX_MCP_MODE_TOKEN or "
                    "AICODEBOX_MCP_MODE_TOKEN_FILE, not both"
                )
            settings = replace(settings, token=read_key_file("AICODEBOX_MCP_MODE_TOKEN_FILE", settings.token_file))
        return settings

    def check_model(self, model: str) -> None:
        """Refuse a ``model`` outside ``AICODEBOX_AVAILABLE_MODELS`` (when that list is set)."""
        if model and self.available_models and model not in self.available_models:
            offered = ", ".join(self.available_models)
            raise ValueError(f"model {model!r} is not available; AICODEBOX_AVAILABLE_MODELS offers: {offered}")
