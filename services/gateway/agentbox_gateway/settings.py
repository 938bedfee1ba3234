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

from .tickets import DEFAULT_TICKET_TTL

DEFAULT_PORT = 18091
DEFAULT_BROWSER_PROXY_PORT = 18093
MAX_MCP_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_UPLOAD_BYTES = 1024**3
#: Room for ``/v1/file/write`` with a 12 MiB file as base64 (4/3 of it), the largest JSON body the SDK
#: sends; files beyond that go by ``/v1/file/upload``.
DEFAULT_MAX_JSON_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_CODE_MEMORY_LIMIT_MB = 4096


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
    #: How many ``/v1/file/watch`` watchers may run at once (429 past it).
    max_file_watchers: int = setting(128, env="AIO_MAX_FILE_WATCHERS", parse=integer(minimum=1))
    #: The browser program (page plane for ``/v1/browser/page|tabs|cookies``).
    browser_url: str = setting("http://127.0.0.1:8100", env="AGENTBOX_BROWSER_URL", parse=_url)
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
    #: The largest request body of any other ``/v1/*`` route (JSON; 413 beyond it).
    max_json_body_bytes: int = setting(
        DEFAULT_MAX_JSON_BODY_BYTES, env="AIO_MAX_JSON_BODY_BYTES", parse=integer(minimum=1)
    )
    #: Data memory of each code-execution process (0: no limit).
    code_memory_limit_mb: int = setting(
        DEFAULT_CODE_MEMORY_LIMIT_MB, env="AIO_CODE_MEMORY_LIMIT_MB", parse=integer(minimum=0)
    )
    #: The sandbox's own X display, the one Chromium runs headful on (the image's Xvfb sets it).
    #: Not ``DISPLAY``: a gateway started on a desktop must not take the desktop's screen for the
    #: sandbox's.
    display: str = setting("", env="AGENTBOX_DISPLAY", parse=text)
    #: The live view (``/vnc/``) and the GUI tools on the display: on when there is a display and
    #: ``DISABLE_VNC`` is not true (see :meth:`from_env`).
    vnc_enabled: bool = False
    #: The VNC server on the display (``host:port``, loopback).
    vnc_address: str = setting("127.0.0.1:5900", env="AIO_VNC_ADDRESS")
    #: The noVNC client's files (Debian's ``novnc`` package).
    novnc_dir: Path = setting(Path("/usr/share/novnc"), env="AIO_NOVNC_DIR", parse=path)

    def own_ports(self) -> frozenset[int]:
        """The sandbox's own ports, never offered as previews of apps: the gateway's, its browser
        proxy's, the browser program's, Chromium's DevTools and the VNC server's."""
        ports = {self.port, self.browser_proxy_port, _port_of(self.browser_url), _port_of(self.cdp_url)}
        ports.add(_port_of(f"tcp://{self.vnc_address}"))
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
