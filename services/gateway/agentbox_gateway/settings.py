"""The gateway's configuration, read once at start-up from the environment and ``aiod`` flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbox_common.observability import ObservabilitySettings
from agentbox_common.settings import env_bool, env_csv, env_float, env_int, env_json_object, env_str

from .tickets import DEFAULT_TICKET_TTL

DEFAULT_PORT = 18091
DEFAULT_BROWSER_PROXY_PORT = 18093
MAX_MCP_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_UPLOAD_BYTES = 1024**3
DEFAULT_CODE_MEMORY_LIMIT_MB = 4096


@dataclass(frozen=True)
class GatewaySettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    #: ``AIO_API_KEY``: when set, every route but the public ones needs ``Authorization: Bearer``.
    api_key: str = ""
    #: ``AIO_ALLOWED_ORIGINS``: non-loopback browser origins allowed to call the gateway.
    allowed_origins: tuple[str, ...] = ()
    #: ``AIO_ALLOWED_HOSTS``: ``Host`` values served besides loopback and the machine's own names
    #: (``name``, ``name:port``, ``name:*``); checked always without a key, with one only when set.
    allowed_hosts: tuple[str, ...] = ()
    #: ``AIO_TICKET_TTL``: how long a single-use URL ticket (``POST /tickets``, ``vnc_url``) stays
    #: good (seconds); long enough for a person to click a link an agent handed them.
    ticket_ttl: float = DEFAULT_TICKET_TTL
    #: ``EXTRA_MCP_SERVERS`` / ``--mcp-servers``: the raw registration object, validated by upstreams.
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    #: ``AIO_MCP_LIST_TIMEOUT``: the most one upstream may add to ``tools/list`` (seconds).
    upstream_list_timeout: float = 2.0
    #: ``AIO_MCP_CALL_TIMEOUT``: the most a forwarded ``tools/call`` may take (seconds).
    upstream_call_timeout: float = 300.0
    #: ``AIO_MCP_LIST_CACHE_TTL``: how long an upstream's tool list is reused before it is asked
    #: again (seconds; 0: asked on every ``tools/list``); a failed call to it asks again at once.
    upstream_list_cache_ttl: float = 5.0
    #: ``AIO_SKILLS_PATH``: folders holding a SKILL.md each.
    skills_path: Path = field(default_factory=lambda: Path.home() / "skills")
    #: ``AIO_CDP_URL``: Chromium's DevTools HTTP endpoint (loopback).
    cdp_url: str = "http://127.0.0.1:9222"
    #: ``SANDBOX_SHUTDOWN_HOOKS``: hooks run at shutdown, a JSON list of ``{name, command, timeout, priority}``.
    shutdown_hooks: str = ""
    #: ``AIO_MAX_FILE_WATCHERS``: how many ``/v1/file/watch`` watchers may run at once (429 past it).
    max_file_watchers: int = 128
    #: ``AGENTBOX_BROWSER_URL``: the browser program (page plane for ``/v1/browser/page|tabs|cookies``).
    browser_url: str = "http://127.0.0.1:8100"
    #: ``AGENTBOX_BROWSER_PROXY_PORT``: the browser's forwarding proxy and PAC file on 127.0.0.1 (0: any free port).
    browser_proxy_port: int = DEFAULT_BROWSER_PROXY_PORT
    #: ``AIO_PROXY_TIMEOUT``: the most an app behind ``/proxy/{port}/`` may take to answer (seconds).
    proxy_timeout: float = 60.0
    #: ``AGENTBOX_METRICS``, ``AGENTBOX_ACCESS_LOG``: ``/metrics`` and the access log.
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    #: ``AIO_MAX_UPLOAD_BYTES``: the largest ``/v1/file/upload`` body (413 beyond it).
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    #: ``AIO_CODE_MEMORY_LIMIT_MB``: data memory of each code-execution process (0: no limit).
    code_memory_limit_mb: int = DEFAULT_CODE_MEMORY_LIMIT_MB
    #: ``AGENTBOX_DISPLAY``: the sandbox's own X display, the one Chromium runs headful on (the
    #: image's Xvfb sets it). Not ``DISPLAY``: a gateway started on a desktop must not take the
    #: desktop's screen for the sandbox's.
    display: str = ""
    #: The live view (``/vnc/``) and the GUI tools on the display: on when there is a display and
    #: ``DISABLE_VNC`` is not true.
    vnc_enabled: bool = False
    #: ``AIO_VNC_ADDRESS``: the VNC server on the display (``host:port``, loopback).
    vnc_address: str = "127.0.0.1:5900"
    #: ``AIO_NOVNC_DIR``: the noVNC client's files (Debian's ``novnc`` package).
    novnc_dir: Path = Path("/usr/share/novnc")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> GatewaySettings:
        """Settings from the environment; keyword overrides (the CLI flags) win when not None."""
        source = os.environ if env is None else env
        values: dict[str, Any] = {
            "api_key": env_str("AIO_API_KEY", "", source),
            "allowed_origins": tuple(env_csv("AIO_ALLOWED_ORIGINS", [], source)),
            "allowed_hosts": tuple(env_csv("AIO_ALLOWED_HOSTS", [], source)),
            "ticket_ttl": env_float("AIO_TICKET_TTL", DEFAULT_TICKET_TTL, source, minimum=1.0),
            "mcp_servers": env_json_object("EXTRA_MCP_SERVERS", source),
            "upstream_list_timeout": env_float("AIO_MCP_LIST_TIMEOUT", 2.0, source, minimum=0.05),
            "upstream_call_timeout": env_float("AIO_MCP_CALL_TIMEOUT", 300.0, source, minimum=0.05),
            "upstream_list_cache_ttl": env_float("AIO_MCP_LIST_CACHE_TTL", 5.0, source),
            "skills_path": Path(env_str("AIO_SKILLS_PATH", str(Path.home() / "skills"), source)),
            "cdp_url": env_str("AIO_CDP_URL", "http://127.0.0.1:9222", source).rstrip("/"),
            "shutdown_hooks": env_str("SANDBOX_SHUTDOWN_HOOKS", "", source),
            "max_file_watchers": env_int("AIO_MAX_FILE_WATCHERS", 128, source, minimum=1),
            "browser_url": env_str("AGENTBOX_BROWSER_URL", "http://127.0.0.1:8100", source).rstrip("/"),
            "browser_proxy_port": env_int(
                "AGENTBOX_BROWSER_PROXY_PORT", DEFAULT_BROWSER_PROXY_PORT, source, minimum=0, maximum=65535
            ),
            "proxy_timeout": env_float("AIO_PROXY_TIMEOUT", 60.0, source, minimum=0.05),
            "observability": ObservabilitySettings.from_env(source),
            "max_upload_bytes": env_int("AIO_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES, source, minimum=1),
            "code_memory_limit_mb": env_int(
                "AIO_CODE_MEMORY_LIMIT_MB", DEFAULT_CODE_MEMORY_LIMIT_MB, source, minimum=0
            ),
            "display": env_str("AGENTBOX_DISPLAY", "", source),
            "vnc_enabled": bool(env_str("AGENTBOX_DISPLAY", "", source)) and not env_bool("DISABLE_VNC", False, source),
            "vnc_address": env_str("AIO_VNC_ADDRESS", "127.0.0.1:5900", source),
            "novnc_dir": Path(env_str("AIO_NOVNC_DIR", "/usr/share/novnc", source)),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)
