"""The gateway's configuration, read once at start-up from the environment and ``aiod`` flags."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentbox_common.keys import read_key_file
from agentbox_common.observability import ObservabilitySettings
from agentbox_common.settings import (
    ConfigError,
    boolean,
    csv,
    env_bool,
    given,
    integer,
    json_object,
    load,
    nested,
    number,
    path,
    setting,
    text,
)

from .auth.tickets import DEFAULT_TICKET_TTL

DEFAULT_PORT = 18091
DEFAULT_BROWSER_PROXY_PORT = 18093
#: sandboxd's ports: the spec's gRPC default; REST on 8092, as the spec's 8080 is API mode's.
DEFAULT_SANDBOXD_GRPC_PORT = 9090
DEFAULT_SANDBOXD_REST_PORT = 8092
MAX_MCP_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_UPLOAD_BYTES = 1024**3
#: Room for ``/v1/file/write`` with a 12 MiB file as base64 (4/3 of it), the largest JSON body the SDK
#: sends; files beyond that go by ``/v1/file/upload``.
DEFAULT_MAX_JSON_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_CODE_MEMORY_LIMIT_MB = 4096
#: aiod's tar tree limits: 100,000 entries, 4 GiB.
DEFAULT_TREE_MAX_ENTRIES = 100_000
DEFAULT_TREE_MAX_BYTES = 4 * 1024**3


def _url(name: str, raw: str) -> str:
    return raw.rstrip("/")


def _port_of(url: str) -> int:
    """The port an ``http://host:port`` setting names (0: none, or not a number)."""
    try:
        return urlsplit(url).port or 0
    except ValueError:
        return 0


_HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?")


def _preview_host(name: str, raw: str) -> str:
    """A host name with ``{port}`` once in its name part (``{port}-preview.example.com``), lower-cased."""
    value = raw.strip().lower()
    if not value:
        return ""
    host = value.partition(":")[0]
    if host.count("{port}") != 1 or not _HOST_NAME.fullmatch(value.replace("{port}", "1")):
        raise ConfigError(
            f"{name} must be a host name with {{port}} in it, such as {{port}}-preview.example.com, got {raw!r}"
        )
    return value


API_SURFACES = ("both", "v2")


BROWSER_START_MODES = ("async", "auto", "manual")


def _browser_start_mode(name: str, raw: str) -> str:
    """AIO's ``async``, ``auto`` or ``manual``."""
    value = raw.strip().lower()
    if value not in BROWSER_START_MODES:
        raise ConfigError(f"{name} must be async, auto or manual, got {raw!r}")
    return value


def _api_surface(name: str, raw: str) -> str:
    """``both`` (aiod's ``full`` too) or ``v2``."""
    value = raw.strip().lower()
    value = "both" if value == "full" else value
    if value not in API_SURFACES:
        raise ConfigError(f"{name} must be both (or full) or v2, got {raw!r}")
    return value


@dataclass(frozen=True)
class GatewaySettings:
    host: str = setting("127.0.0.1", flag="--host", help="address to bind")
    port: int = setting(DEFAULT_PORT, flag="--port", parse=integer(), help="port")
    #: When set, every route but the public ones needs ``Authorization: Bearer``. The key itself, or
    #: ``sha256:<hex>``, its digest: the gateway then checks the key without holding it.
    api_key: str = setting("", env="AIO_API_KEY", flag="--api-key", metavar="KEY")
    #: A file holding the key (or its digest) instead of ``AIO_API_KEY``, read at start-up: keeps the
    #: key out of every process environment (deploy/kubernetes/ gives each pod its digest this way).
    api_key_file: Path | None = setting(None, env="AIO_API_KEY_FILE", parse=path)
    #: Browser origins besides the gateway's own allowed to call it (another loopback origin too).
    allowed_origins: tuple[str, ...] = setting((), env="AIO_ALLOWED_ORIGINS", parse=csv)
    #: Origins whose pages may embed the gateway's pages in a frame, besides its own (``frame-ancestors``).
    frame_ancestors: tuple[str, ...] = setting((), env="AIO_FRAME_ANCESTORS", parse=csv)
    #: ``Host`` values served besides loopback and the machine's own names (``name``, ``name:port``,
    #: ``name:*``); checked always without a key, with one only when set.
    allowed_hosts: tuple[str, ...] = setting((), env="AIO_ALLOWED_HOSTS", parse=csv)
    #: A wildcard host previews are served on besides ``{port}.localhost`` (``{port}-preview.example.com``):
    #: every path on such a host is the app's.
    preview_host: str = setting("", env="AIO_PREVIEW_HOST", parse=_preview_host)
    #: How long a single-use URL ticket (``POST /tickets``, ``vnc_url``) stays good (seconds); long
    #: enough for a person to click a link an agent handed them.
    ticket_ttl: float = setting(DEFAULT_TICKET_TTL, env="AIO_TICKET_TTL", parse=number(minimum=1.0))
    #: The raw registration object, validated by upstreams.
    mcp_servers: Mapping[str, Any] = setting(
        default_factory=dict, env="EXTRA_MCP_SERVERS", parse=json_object, flag="--mcp-servers", metavar="JSON"
    )
    #: The most one upstream may add to ``tools/list`` (seconds).
    upstream_list_timeout: float = setting(2.0, env="AIO_MCP_LIST_TIMEOUT", parse=number(minimum=0.05))
    #: The most a forwarded ``tools/call`` may take (seconds).
    upstream_call_timeout: float = setting(300.0, env="AIO_MCP_CALL_TIMEOUT", parse=number(minimum=0.05))
    #: How long an upstream's tool list is reused before it is asked again (seconds; 0: asked on
    #: every ``tools/list``); a failed call to it asks again at once.
    upstream_list_cache_ttl: float = setting(5.0, env="AIO_MCP_LIST_CACHE_TTL", parse=number())
    #: Folders holding a SKILL.md each.
    skills_path: Path = setting(
        default_factory=lambda: Path.home() / "skills", env="AIO_SKILLS_PATH", parse=path, shown="`~/skills`"
    )
    #: Chromium's DevTools HTTP endpoint (loopback).
    cdp_url: str = setting("http://127.0.0.1:9222", env="AIO_CDP_URL", parse=_url)
    #: Hooks run at shutdown, a JSON list of ``{name, command, timeout, priority}``.
    shutdown_hooks: str = setting("", env="SANDBOX_SHUTDOWN_HOOKS")
    #: Which REST surfaces are served: ``both`` (``/v1`` and ``/v2``; aiod's ``full`` is the same)
    #: or ``v2`` (``/v2`` and ``/mcp`` only, every ``/v1`` path answers 404).
    api_surface: str = setting(
        "both", env="AIO_API_SURFACE", parse=_api_surface, flag="--api-surface", metavar="SURFACE"
    )
    #: ``/v2/commands`` running at once (429 past it).
    command_max_running: int = setting(32, env="AIO_COMMAND_MAX_RUNNING", parse=integer(minimum=1))
    #: How long a finished ``/v2/commands`` command's output stays readable (seconds).
    command_retain_seconds: float = setting(600.0, env="AIO_COMMAND_RETAIN_SECS", parse=number(minimum=0.0))
    #: Characters of output kept of finished ``/v2/commands`` commands in all (the oldest go first).
    command_retain_chars: int = setting(64_000_000, env="AIO_COMMAND_RETAIN_CHARS", parse=integer(minimum=0))
    #: How many ``/v1/file/watch`` and ``/v2/watch`` watchers may run at once (429 past it).
    max_file_watchers: int = setting(128, env="AIO_MAX_FILE_WATCHERS", parse=integer(minimum=1))
    #: How many events each watcher keeps for its cursors (older ones are dropped: ``overflow``).
    watch_events_kept: int = setting(10_000, env="AIO_WATCH_EVENTS_KEPT", parse=integer(minimum=1))
    #: How many ``/v2/pty`` terminals (the dashboard's among them) may be open at once (429 past it).
    pty_max_sessions: int = setting(20, env="AIO_PTY_MAX_SESSIONS", parse=integer(minimum=1))
    #: Seconds a ``/v2/pty`` terminal may go unattached and unused before it is closed.
    pty_idle_timeout: float = setting(3600.0, env="AIO_PTY_IDLE_TIMEOUT", parse=number(minimum=1.0))
    #: Output each ``/v2/pty`` terminal retains for a reattach (``restore``, resume), in bytes.
    pty_buffer_bytes: int = setting(10 * 1024 * 1024, env="AIO_PTY_BUFFER_BYTES", parse=integer(minimum=64 * 1024))
    #: How long a finished MCP task (the tasks extension) stays readable by ``tasks/get`` (seconds).
    task_retain_seconds: float = setting(600.0, env="AIO_TASK_RETAIN_SECS", parse=number(minimum=0.0))
    #: The browser program (page plane for ``/v1/browser/page|tabs|cookies``).
    browser_url: str = setting("http://127.0.0.1:8100", env="AGENTBOX_BROWSER_URL", parse=_url)
    #: AIO's ``BROWSER_START_MODE``: ``async`` keeps the browser program (the MCP server at
    #: ``AGENTBOX_BROWSER_URL``) off ``/ready``, whose body says where it is; ``auto``: ``/ready`` waits for it;
    #: ``manual``: the browser (and its display) start on the first call that needs them.
    browser_start_mode: str = setting("async", env="BROWSER_START_MODE", parse=_browser_start_mode)
    #: The browser program's tools as the image's build listed them: served while it starts (or, with
    #: ``manual``, before it is started), so the catalogue is whole from the first ``tools/list``.
    browser_tools_catalogue: Path = setting(
        Path("/opt/agentbox/share/browser-tools.json"), env="AGENTBOX_BROWSER_TOOLS", parse=path
    )
    #: The most a call that needs the browser waits for it to start (seconds).
    browser_start_timeout: float = setting(30.0, env="AGENTBOX_BROWSER_START_TIMEOUT", parse=number(minimum=0.1))
    #: Where the image's start-on-first-use wrappers wait (``BROWSER_START_MODE=manual``; set by the entrypoint).
    start_on_use_dir: str = setting("", env="AGENTBOX_START_ON_USE_DIR", parse=text)
    #: The browser's forwarding proxy and PAC file on 127.0.0.1 (0: any free port).
    browser_proxy_port: int = setting(
        DEFAULT_BROWSER_PROXY_PORT, env="AGENTBOX_BROWSER_PROXY_PORT", parse=integer(minimum=0, maximum=65535)
    )
    #: The most an app behind ``/proxy/{port}/`` may take to answer (seconds).
    proxy_timeout: float = setting(60.0, env="AIO_PROXY_TIMEOUT", parse=number(minimum=0.05))
    #: ``AGENTBOX_METRICS``, ``AGENTBOX_ACCESS_LOG``: ``/metrics`` and the access log.
    observability: ObservabilitySettings = nested(ObservabilitySettings)
    #: The largest ``/v1/file/upload`` body (413 beyond it).
    max_upload_bytes: int = setting(DEFAULT_MAX_UPLOAD_BYTES, env="AIO_MAX_UPLOAD_BYTES", parse=integer(minimum=1))
    #: ``GET``/``PUT /v2/fs/tree``: the most entries one tar tree may hold (413 beyond it).
    fs_tree_max_entries: int = setting(
        DEFAULT_TREE_MAX_ENTRIES, env="AIO_FS_TREE_MAX_ENTRIES", parse=integer(minimum=1)
    )
    #: ``GET``/``PUT /v2/fs/tree``: the largest tar body, and the most file bytes one tree may hold.
    fs_tree_max_bytes: int = setting(DEFAULT_TREE_MAX_BYTES, env="AIO_FS_TREE_MAX_BYTES", parse=integer(minimum=1))
    #: The largest request body of any other ``/v1/*`` route (JSON; 413 beyond it).
    max_json_body_bytes: int = setting(
        DEFAULT_MAX_JSON_BODY_BYTES, env="AIO_MAX_JSON_BODY_BYTES", parse=integer(minimum=1)
    )
    #: Data memory of each code-execution process (0: no limit).
    code_memory_limit_mb: int = setting(
        DEFAULT_CODE_MEMORY_LIMIT_MB, env="AIO_CODE_MEMORY_LIMIT_MB", parse=integer(minimum=0)
    )
    #: Python sessions (each a Jupyter kernel) open at once (429 past it; implicit idle ones make room).
    kernel_max_sessions: int = setting(5, env="AIO_KERNEL_MAX_SESSIONS", parse=integer(minimum=1))
    #: Seconds a Python kernel session may stay idle before it is closed.
    kernel_session_timeout: float = setting(300.0, env="AIO_KERNEL_SESSION_TIMEOUT_SECS", parse=number(minimum=1.0))
    #: Started Jupyter kernels kept waiting for new Python sessions, from the first Python call on
    #: (0: each session starts its own, about a second).
    kernel_prewarm: int = setting(1, env="AIO_KERNEL_PREWARM", parse=integer(minimum=0, maximum=8))
    #: The sandbox's own X display, the one Chromium runs headful on (the image's Xvfb sets it).
    #: Not ``DISPLAY``: a gateway started on a desktop must not take the desktop's screen for the
    #: sandbox's.
    display: str = setting("", env="AGENTBOX_DISPLAY", parse=text)
    #: The live view (``/vnc/``) and the GUI tools on the display: on when there is a display and
    #: ``DISABLE_VNC`` is not true (see :meth:`from_env`).
    vnc_enabled: bool = False
    #: The VNC server on the display (``host:port``, loopback).
    vnc_address: str = setting("127.0.0.1:5900", env="AIO_VNC_ADDRESS")
    #: The session D-Bus of the display's programs, where ``org.a11y.Bus`` gives out the accessibility
    #: bus (AT-SPI2) ``/v2/computer/accessibility`` reads; empty: no accessibility tree. Not
    #: ``DBUS_SESSION_BUS_ADDRESS``, for the reason ``AGENTBOX_DISPLAY`` is not ``DISPLAY`` (the image sets it
    #: with the display).
    session_bus: str = setting("", env="AGENTBOX_SESSION_BUS", parse=text)
    #: The noVNC client's files (Debian's ``novnc`` package).
    novnc_dir: Path = setting(Path("/usr/share/novnc"), env="AIO_NOVNC_DIR", parse=path)
    #: Serve kubernetes-sigs/agent-sandbox's runtime API (sandboxd: the gRPC ProcessService and the
    #: filesystem REST API) beside the gateway, for that project's SDKs.
    sandboxd_enabled: bool = setting(False, env="SANDBOXD_ENABLED", parse=boolean)
    #: The address sandboxd's two listeners bind (loopback, as the spec says; ``0.0.0.0`` for a pod's
    #: Service or router).
    sandboxd_host: str = setting("127.0.0.1", env="SANDBOXD_LISTEN_HOST", parse=text)
    #: sandboxd's gRPC ProcessService port.
    sandboxd_grpc_port: int = setting(
        DEFAULT_SANDBOXD_GRPC_PORT, env="SANDBOXD_GRPC_PORT", parse=integer(minimum=0, maximum=65535)
    )
    #: sandboxd's filesystem and runtime REST port.
    sandboxd_rest_port: int = setting(
        DEFAULT_SANDBOXD_REST_PORT, env="SANDBOXD_REST_PORT", parse=integer(minimum=0, maximum=65535)
    )
    #: The root every sandboxd path and working directory stays under (created if missing).
    sandboxd_root: Path = setting(Path("/workspace"), env="SANDBOXD_ROOT_DIR", parse=path)
    #: The prefix of the variables ``GET /v1/metadata`` shows (names with TOKEN, SECRET, KEY... never).
    sandboxd_metadata_prefix: str = setting("SANDBOX_", env="SANDBOXD_METADATA_ENV_PREFIX", parse=text)

    def own_ports(self) -> frozenset[int]:
        """The sandbox's own ports, never offered as previews of apps: the gateway's, its browser
        proxy's, the browser program's, Chromium's DevTools and the VNC server's."""
        ports = {self.port, self.browser_proxy_port, _port_of(self.browser_url), _port_of(self.cdp_url)}
        ports.add(_port_of(f"tcp://{self.vnc_address}"))
        if self.sandboxd_enabled:
            ports.update((self.sandboxd_grpc_port, self.sandboxd_rest_port))
        return frozenset(port for port in ports if port)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> GatewaySettings:
        """Settings from the environment; keyword overrides (the CLI flags) win when not None."""
        source = os.environ if env is None else env
        settings = load(cls, source)
        vnc_enabled = bool(settings.display) and not env_bool("DISABLE_VNC", False, source)
        settings = replace(settings, **{"vnc_enabled": vnc_enabled, **given(overrides)})
        if settings.api_key_file is not None:
            if settings.api_key:
                raise ConfigError("AIO_API_KEY_FILE: set either AIO_API_KEY (--api-key) or AIO_API_KEY_FILE, not both")
            settings = replace(settings, api_key=read_key_file("AIO_API_KEY_FILE", settings.api_key_file))
        return settings


@dataclass(frozen=True)
class DoctorSettings:
    """What ``aiod doctor`` needs besides the gateway's settings: whom to check as, whom to ask."""

    #: The running gateway ``aiod doctor`` asks for the upstreams it aggregates and their tools (the
    #: image sets its own, ``http://127.0.0.1:8091``).
    gateway_url: str = setting(
        f"http://127.0.0.1:{DEFAULT_PORT}", env="AIO_GATEWAY_URL", parse=_url, flag="--gateway-url", metavar="URL"
    )
    #: The non-root user the image runs every program as: ``aiod doctor`` started as root checks as it.
    sandbox_user: str = setting("", env="AGENTBOX_USER")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> DoctorSettings:
        return load(cls, os.environ if env is None else env, **overrides)
