"""``agentbox-browser``: Chromium under supervision plus the browser MCP server, in one event loop."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from agentbox_common.logging import configure_logging
from agentbox_common.serving import serve
from agentbox_common.settings import ConfigError, add_flags, flag_values

from .chromium import port_in_use
from .server import build_app
from .session import driver_node_options
from .settings import BrowserSettings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentbox-browser",
        description="Start Chromium (CDP on 127.0.0.1) and serve the page-level browser_* MCP tools at /mcp.",
    )
    add_flags(parser, BrowserSettings)
    return parser


def settings_from(argv: list[str] | None = None) -> BrowserSettings:
    """The environment's settings, each flag given replacing its variable."""
    return BrowserSettings.from_env(**flag_values(_parser().parse_args(argv), BrowserSettings))


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
    os.environ["NODE_OPTIONS"] = driver_node_options(os.environ.get("NODE_OPTIONS"))
    serve(build_app(settings), settings.host, settings.port)


if __name__ == "__main__":
    main()
