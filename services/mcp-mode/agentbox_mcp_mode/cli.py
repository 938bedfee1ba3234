"""Console commands: ``agentbox-mcp-mode`` serves the standalone MCP mode on
``AICODEBOX_MCP_MODE_PORT`` (8081) at ``AICODEBOX_MCP_MODE_HOST`` (0.0.0.0); ``agentbox-api`` serves
API mode on ``AICODEBOX_API_MODE_PORT`` (8080) at ``AICODEBOX_API_MODE_HOST`` (0.0.0.0), with MCP
mounted at ``/mcp/`` when ``AICODEBOX_MCP_MODE=1`` (the image starts it when
``AICODEBOX_API_MODE=1``; running the command is itself the choice of API mode). A configuration
error (an empty ``AICODEBOX_MCP_MODE_ALLOWED_HOSTS`` or ``AICODEBOX_AVAILABLE_MODELS``, an unknown
``AICODEBOX_ADAPTER`` ...) stops either at start-up with a message naming the variable and exit
status 2, as every program here (``agentbox_common.service``). Both take no options: ``--help``
prints the usage and exits 0, any other argument is a usage error (exit 2), so a mistyped flag never
starts an unauthenticated server."""

from __future__ import annotations

import argparse

from starlette.types import ASGIApp

from agentbox_common.service import run
from agentbox_common.settings import described

from .adapters import load_adapter
from .api_mode.settings import ApiModeSettings
from .settings import McpModeSettings

MCP_MODE_USAGE = (
    "Serve aicodebox's MCP mode (run_prompt and the workspace file tools) over streamable HTTP. "
    f"Configured by environment variables only: {described(McpModeSettings, 'port')}, "
    f"{described(McpModeSettings, 'host')}, AICODEBOX_MCP_MODE_TOKEN, AICODEBOX_WORKSPACE, "
    "AICODEBOX_ADAPTER and the others listed in docs/configuration.md."
)
API_USAGE = (
    "Serve aicodebox's API mode (/run, /openai/v1/*, /files and, with AICODEBOX_MCP_MODE=1, MCP at "
    f"/mcp/). Configured by environment variables only: {described(ApiModeSettings, 'port')}, "
    f"{described(ApiModeSettings, 'host')}, AICODEBOX_API_MODE_TOKEN, AICODEBOX_AVAILABLE_MODELS and "
    "the others listed in docs/configuration.md."
)


def parse_arguments(prog: str, description: str, argv: list[str] | None) -> None:
    """Print the usage for ``--help`` (exit 0) and refuse any argument (exit 2)."""
    argparse.ArgumentParser(prog=prog, description=description).parse_args(argv)


def build_mcp_mode(settings: McpModeSettings) -> ASGIApp:
    adapter = load_adapter(settings)  # an unknown adapter is refused before the MCP SDK is imported (slow)
    from .app import build_app

    return build_app(settings, adapter)


def build_api(settings: ApiModeSettings) -> ASGIApp:
    adapter = load_adapter(settings.mcp)  # refused, like a bad setting, before the slow imports
    from .api_mode.app import build_api_app

    return build_api_app(settings, adapter)


def main_mcp_mode(argv: list[str] | None = None) -> None:
    parse_arguments("agentbox-mcp-mode", MCP_MODE_USAGE, argv)
    run("agentbox-mcp-mode", McpModeSettings.from_env, build_mcp_mode)


def main_api(argv: list[str] | None = None) -> None:
    parse_arguments("agentbox-api", API_USAGE, argv)
    run("agentbox-api", ApiModeSettings.from_env, build_api)


if __name__ == "__main__":
    main_mcp_mode()
