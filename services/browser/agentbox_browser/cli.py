"""``agentbox-browser``: Chromium under supervision plus the browser MCP server, in one event loop."""

from __future__ import annotations

import argparse
import os

from starlette.types import ASGIApp

from agentbox_common.service import run
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


def build(settings: BrowserSettings) -> ASGIApp:
    """The app, unless Chromium's DevTools port is taken (a refusal to start, like a bad setting)."""
    if port_in_use(settings.cdp_port):
        raise ConfigError(f"AGENTBOX_CDP_PORT {settings.cdp_port} is already in use on 127.0.0.1")
    os.environ["NODE_OPTIONS"] = driver_node_options(os.environ.get("NODE_OPTIONS"))
    return build_app(settings)


def main(argv: list[str] | None = None) -> None:
    run("agentbox-browser", lambda: settings_from(argv), build)


if __name__ == "__main__":
    main()
