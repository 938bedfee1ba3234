"""The browser program's configuration, read once at start-up from the environment and the
``agentbox-browser`` flags (a flag is the same setting as its variable, so a bad value names the variable)."""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from agentbox_common.settings import ConfigError, env_bool, env_float, env_int, env_str

DEFAULT_VIEWPORT = "1280x720"


@dataclass(frozen=True)
class Viewport:
    width: int
    height: int

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


@dataclass(frozen=True)
class BrowserSettings:
    #: ``AGENTBOX_BROWSER_HOST``: where the MCP server listens (on loopback the SDK's Host/Origin
    #: checks stay on).
    host: str
    #: ``AGENTBOX_BROWSER_PORT``: the MCP server's port (``POST /mcp``, ``GET /health``).
    port: int
    #: ``AGENTBOX_CDP_PORT``: Chromium's DevTools port, always bound to 127.0.0.1.
    cdp_port: int
    #: ``AGENTBOX_CHROMIUM``: the Chromium executable (default: ``chromium`` on PATH).
    chromium: str
    #: ``AGENTBOX_VIEWPORT``: ``WxH`` (``W,H`` accepted, as mcp-server-browser writes it).
    viewport: Viewport
    #: ``AGENTBOX_HEADLESS``: ``--headless=new`` when true; false needs a ``DISPLAY``.
    headless: bool
    #: ``AGENTBOX_BROWSER_ARGS``: extra Chromium flags, shell-quoted.
    extra_args: tuple[str, ...]
    #: ``AGENTBOX_NAV_TIMEOUT``: seconds a navigation (or a page script) may take.
    nav_timeout: float
    #: ``AGENTBOX_PROXY_PAC_URL``: the PAC file Chromium follows (the gateway's browser proxy), or "".
    proxy_pac_url: str = ""

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.cdp_port}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BrowserSettings:
        source = os.environ if env is None else env
        return cls(
            host=env_str("AGENTBOX_BROWSER_HOST", "127.0.0.1", source).strip() or "127.0.0.1",
            port=env_int("AGENTBOX_BROWSER_PORT", 8100, source, minimum=1, maximum=65535),
            cdp_port=env_int("AGENTBOX_CDP_PORT", 9222, source, minimum=1, maximum=65535),
            chromium=_chromium(env_str("AGENTBOX_CHROMIUM", "", source)),
            viewport=parse_viewport("AGENTBOX_VIEWPORT", env_str("AGENTBOX_VIEWPORT", DEFAULT_VIEWPORT, source)),
            headless=env_bool("AGENTBOX_HEADLESS", True, source),
            extra_args=_args("AGENTBOX_BROWSER_ARGS", env_str("AGENTBOX_BROWSER_ARGS", "", source)),
            nav_timeout=env_float("AGENTBOX_NAV_TIMEOUT", 30.0, source, minimum=0.1),
            proxy_pac_url=env_str("AGENTBOX_PROXY_PAC_URL", "", source).strip(),
        )


def parse_viewport(name: str, raw: str) -> Viewport:
    parts = raw.strip().lower().replace(",", "x").split("x")
    try:
        width, height = (int(part) for part in parts)
    except ValueError:
        raise ConfigError(f"{name} must look like 1280x720, got {raw!r}") from None
    if not (1 <= width <= 10000 and 1 <= height <= 10000):
        raise ConfigError(f"{name} must be between 1x1 and 10000x10000, got {raw!r}")
    return Viewport(width, height)


def _chromium(raw: str) -> str:
    if not raw.strip():
        found = shutil.which("chromium")
        if found is None:
            raise ConfigError("AGENTBOX_CHROMIUM is not set and no `chromium` is on PATH (apt-get install chromium)")
        return found
    path = shutil.which(raw.strip())
    if path is None:
        raise ConfigError(f"AGENTBOX_CHROMIUM={raw!r} is not an executable file")
    return path


def _args(name: str, raw: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(raw))
    except ValueError as exc:
        raise ConfigError(f"{name} is not valid shell quoting: {exc}") from None
