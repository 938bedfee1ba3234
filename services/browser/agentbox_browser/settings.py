"""The browser program's configuration, read once at start-up from the environment and the
``agentbox-browser`` flags (a flag is the same setting as its variable, so a bad value names the variable)."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentbox_common.observability import ObservabilitySettings
from agentbox_common.settings import (
    ConfigError,
    boolean,
    load,
    nested,
    nonblank,
    number,
    port_number,
    setting,
    stripped,
)

DEFAULT_VIEWPORT = "1280x720"


@dataclass(frozen=True)
class Viewport:
    width: int
    height: int

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


def parse_viewport(name: str, raw: str) -> Viewport:
    parts = raw.strip().lower().replace(",", "x").split("x")
    try:
        width, height = (int(part) for part in parts)
    except ValueError:
        raise ConfigError(f"{name} must look like 1280x720, got {raw!r}") from None
    if not (1 <= width <= 10000 and 1 <= height <= 10000):
        raise ConfigError(f"{name} must be between 1x1 and 10000x10000, got {raw!r}")
    return Viewport(width, height)


def _chromium(name: str, raw: str) -> str:
    if not raw.strip():
        found = shutil.which("chromium")
        if found is None:
            raise ConfigError(f"{name} is not set and no `chromium` is on PATH (apt-get install chromium)")
        return found
    path = shutil.which(raw.strip())
    if path is None:
        raise ConfigError(f"{name}={raw!r} is not an executable file")
    return path


def _args(name: str, raw: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(raw))
    except ValueError as exc:
        raise ConfigError(f"{name} is not valid shell quoting: {exc}") from None


@dataclass(frozen=True)
class BrowserSettings:
    #: Where the MCP server listens (on loopback the SDK's Host/Origin checks stay on).
    host: str = setting(
        "127.0.0.1", env="AGENTBOX_BROWSER_HOST", parse=nonblank, flag="--host", help="address of the MCP server"
    )
    #: The MCP server's port (``POST /mcp``, ``GET /health``).
    port: int = setting(
        8100, env="AGENTBOX_BROWSER_PORT", parse=port_number, flag="--port", help="port of the MCP server"
    )
    #: Chromium's DevTools port, always bound to 127.0.0.1.
    cdp_port: int = setting(
        9222,
        env="AGENTBOX_CDP_PORT",
        parse=port_number,
        flag="--cdp-port",
        help="Chromium's DevTools port on 127.0.0.1",
    )
    #: The Chromium executable (default: ``chromium`` on PATH).
    chromium: str = setting(
        default_factory=lambda: _chromium("AGENTBOX_CHROMIUM", ""),
        env="AGENTBOX_CHROMIUM",
        parse=_chromium,
        flag="--chromium",
        help="Chromium executable",
        shown="`chromium` on `PATH`",
    )
    #: ``WxH`` (``W,H`` accepted, as mcp-server-browser writes it).
    viewport: Viewport = setting(
        parse_viewport("AGENTBOX_VIEWPORT", DEFAULT_VIEWPORT),
        env="AGENTBOX_VIEWPORT",
        parse=parse_viewport,
        flag="--viewport",
        help="page size WxH",
    )
    #: ``--headless=new`` when true; false needs a ``DISPLAY``.
    headless: bool = setting(
        True, env="AGENTBOX_HEADLESS", parse=boolean, flag="--headless", help="run Chromium headless"
    )
    #: Extra Chromium flags, shell-quoted.
    extra_args: tuple[str, ...] = setting(
        (), env="AGENTBOX_BROWSER_ARGS", parse=_args, flag="--browser-args", help="extra Chromium flags, shell-quoted"
    )
    #: Seconds a navigation (or a page script) may take.
    nav_timeout: float = setting(
        30.0,
        env="AGENTBOX_NAV_TIMEOUT",
        parse=number(minimum=0.1),
        flag="--nav-timeout",
        help="navigation timeout in seconds",
    )
    #: The PAC file Chromium follows (the gateway's browser proxy), or "".
    proxy_pac_url: str = setting("", env="AGENTBOX_PROXY_PAC_URL", parse=stripped)
    #: ``AGENTBOX_METRICS``, ``AGENTBOX_ACCESS_LOG``: ``/metrics`` and the access log, as every program's.
    observability: ObservabilitySettings = nested(ObservabilitySettings)

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.cdp_port}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> BrowserSettings:
        """Settings from the environment; keyword overrides (the flags) win when not None."""
        return load(cls, env, **overrides)
