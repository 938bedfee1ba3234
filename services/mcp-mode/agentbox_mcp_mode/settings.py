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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbox_common.observability import ObservabilitySettings
from agentbox_common.settings import ConfigError, env_bool, env_csv, env_float, env_int, env_str

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


@dataclass(frozen=True)
class McpModeSettings:
    #: Root every file path and run workspace is confined to.
    workspace: Path
    #: ``AICODEBOX_MCP_MODE``: whether MCP is on (API mode mounts it only then).
    mcp_mode: bool = False
    host: str = "0.0.0.0"
    port: int = DEFAULT_PORT
    #: ``AICODEBOX_MCP_MODE_TOKEN``; empty means MCP has no auth.
    token: str = ""
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS
    allowed_origins: tuple[str, ...] = DEFAULT_ALLOWED_ORIGINS
    #: ``AICODEBOX_ADAPTER``: ``claude``, ``codex``, ``openai`` or ``package.module:Class``.
    adapter: str = DEFAULT_ADAPTER
    #: ``AICODEBOX_AVAILABLE_MODELS``: when non-empty, ``model`` must be one of these.
    available_models: tuple[str, ...] = ()
    #: ``AICODEBOX_JSON_RETRIES``: re-runs after an answer that does not match ``json_schema``.
    json_retries: int = 3
    #: ``AICODEBOX_RUN_TIMEOUT``: seconds before a run's process group is killed.
    run_timeout: float = 3600.0
    #: ``AICODEBOX_JSON_VALIDATION_TIMEOUT``: seconds matching one answer against ``json_schema`` may take.
    validation_timeout: float = DEFAULT_VALIDATION_TIMEOUT
    #: ``AICODEBOX_AGENT_BINARY``: overrides the CLI adapters' executable (``claude`` / ``codex``).
    agent_binary: str = ""
    #: ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``: the built-in agent's chat-completions endpoint.
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str = ""
    #: ``AICODEBOX_AGENT_MAX_TURNS``: model calls the built-in agent may make in one run.
    agent_max_turns: int = 50
    #: ``AICODEBOX_MAX_CONCURRENT_RUNS``: agent runs at once across workspaces (more: refused).
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS
    #: ``AICODEBOX_MAX_UPLOAD_BYTES``: largest ``PUT /files`` body (more: 413).
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    #: ``AICODEBOX_STATE_DIR``: where the built-in agent keeps its sessions (outside the workspace).
    state_dir: Path = field(default_factory=lambda: _default_state_dir(os.environ))
    #: ``AGENTBOX_METRICS``, ``AGENTBOX_ACCESS_LOG``: ``/metrics`` and the access log.
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> McpModeSettings:
        """Settings from the environment; keyword overrides win when not None. Raises ConfigError."""
        source = os.environ if env is None else env
        values: dict[str, Any] = {
            "workspace": _workspace_root(source),
            "mcp_mode": env_bool("AICODEBOX_MCP_MODE", False, source),
            "host": env_str("AICODEBOX_MCP_MODE_HOST", "", source).strip() or "0.0.0.0",
            "port": env_int("AICODEBOX_MCP_MODE_PORT", DEFAULT_PORT, source, minimum=1, maximum=65535),
            "token": env_str("AICODEBOX_MCP_MODE_TOKEN", "", source),
            "allowed_hosts": tuple(env_csv("AICODEBOX_MCP_MODE_ALLOWED_HOSTS", list(DEFAULT_ALLOWED_HOSTS), source)),
            "allowed_origins": tuple(
                env_csv("AICODEBOX_MCP_MODE_ALLOWED_ORIGINS", list(DEFAULT_ALLOWED_ORIGINS), source)
            ),
            "adapter": env_str("AICODEBOX_ADAPTER", "", source).strip() or DEFAULT_ADAPTER,
            "available_models": tuple(
                m.strip() for m in env_str("AICODEBOX_AVAILABLE_MODELS", "", source).split(",") if m.strip()
            ),
            "json_retries": env_int("AICODEBOX_JSON_RETRIES", 3, source, minimum=0, maximum=20),
            "run_timeout": env_float("AICODEBOX_RUN_TIMEOUT", 3600.0, source, minimum=0.1),
            "validation_timeout": env_float(
                "AICODEBOX_JSON_VALIDATION_TIMEOUT", DEFAULT_VALIDATION_TIMEOUT, source, minimum=0.1
            ),
            "agent_binary": env_str("AICODEBOX_AGENT_BINARY", "", source).strip(),
            "openai_base_url": (env_str("OPENAI_BASE_URL", "", source).strip() or "https://api.openai.com/v1").rstrip(
                "/"
            ),
            "openai_api_key": env_str("OPENAI_API_KEY", "", source),
            "agent_max_turns": env_int("AICODEBOX_AGENT_MAX_TURNS", 50, source, minimum=1, maximum=1000),
            "max_concurrent_runs": env_int(
                "AICODEBOX_MAX_CONCURRENT_RUNS", DEFAULT_MAX_CONCURRENT_RUNS, source, minimum=1, maximum=1000
            ),
            "observability": ObservabilitySettings.from_env(source),
            "max_upload_bytes": env_int("AICODEBOX_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES, source, minimum=1),
            "state_dir": Path(env_str("AICODEBOX_STATE_DIR", "", source).strip() or _default_state_dir(source)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def check_model(self, model: str) -> None:
        """Refuse a ``model`` outside ``AICODEBOX_AVAILABLE_MODELS`` (when that list is set)."""
        if model and self.available_models and model not in self.available_models:
            offered = ", ".join(self.available_models)
            raise ValueError(f"model {model!r} is not available; AICODEBOX_AVAILABLE_MODELS offers: {offered}")
