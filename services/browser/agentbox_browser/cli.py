"""``agentbox-browser``: Chromium under supervision plus the browser MCP server, in one event loop."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from agentbox_common.logging import configure_logging
from agentbox_common.serving import serve
from agentbox_common.settings import ConfigError

from .chromium import port_in_use
from .server import build_app
from .settings import BrowserSettings

#: Each flag sets the variable of the same meaning (so both are checked, and named, the same way).
FLAGS = {
    "host": "AGENTBOX_BROWSER_HOST",
    "port": "AGENTBOX_BROWSER_PORT",
    "cdp_port": "AGENTBOX_CDP_PORT",
    "chromium": "AGENTBOX_CHROMIUM",
    "viewport": "AGENTBOX_VIEWPORT",
    "headless": "AGENTBOX_HEADLESS",
    "browser_args": "AGENTBOX_BROWSER_ARGS",
    "nav_timeout": "AGENTBOX_NAV_TIMEOUT",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentbox-browser",
        description="Start Chromium (CDP on 127.0.0.1) and serve the page-level browser_* MCP tools at /mcp.",
    )
    parser.add_argument("--host", help="address of the MCP server (AGENTBOX_BROWSER_HOST, default 127.0.0.1)")
    parser.add_argument("--port", help="port of the MCP server (AGENTBOX_BROWSER_PORT, default 8100)")
    parser.add_argument("--cdp-port", help="Chromium's DevTools port on 127.0.0.1 (AGENTBOX_CDP_PORT, default 9222)")
    parser.add_argument("--chromium", help="Chromium executable (AGENTBOX_CHROMIUM, default: chromium on PATH)")
    parser.add_argument("--viewport", help="page size WxH (AGENTBOX_VIEWPORT, default 1280x720)")
    parser.add_argument(
        "--headless",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run Chromium headless (AGENTBOX_HEADLESS, default true)",
    )
    parser.add_argument("--browser-args", help="extra Chromium flags, shell-quoted (AGENTBOX_BROWSER_ARGS)")
    parser.add_argument("--nav-timeout", help="navigation timeout in seconds (AGENTBOX_NAV_TIMEOUT, default 30)")
    return parser


def settings_from(argv: list[str] | None = None) -> BrowserSettings:
    args = vars(_parser().parse_args(argv))
    env = dict(os.environ)
    for option, variable in FLAGS.items():
        value = args[option]
        if value is not None:
            env[variable] = str(value).lower() if isinstance(value, bool) else str(value)
    return BrowserSettings.from_env(env)


def main(argv: list[str] | None = None) -> None:
    configure_logging()
    # The SDK logs every stateless request, httpx every CDP readiness probe: keep that out of INFO.
    for noisy in ("mcp.server.streamable_http", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        settings = settings_from(argv)
    except ConfigError as exc:
        sys.exit(f"agentbox-browser: {exc}")
    if port_in_use(settings.cdp_port):
        sys.exit(f"agentbox-browser: AGENTBOX_CDP_PORT {settings.cdp_port} is already in use on 127.0.0.1")
    serve(build_app(settings), settings.host, settings.port)


if __name__ == "__main__":
    main()
