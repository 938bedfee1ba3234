"""Console commands: ``agentbox-mcp-mode`` serves the standalone MCP mode on
``AICODEBOX_MCP_MODE_PORT`` (8081) at ``AICODEBOX_MCP_MODE_HOST`` (0.0.0.0); ``agentbox-api`` serves
API mode on ``AICODEBOX_API_MODE_PORT`` (8080) at ``AICODEBOX_API_MODE_HOST`` (0.0.0.0), with MCP
mounted at ``/mcp/`` when ``AICODEBOX_MCP_MODE=1`` (the image starts it when
``AICODEBOX_API_MODE=1``; running the command is itself the choice of API mode). A configuration
error (an empty ``AICODEBOX_MCP_MODE_ALLOWED_HOSTS`` or ``AICODEBOX_AVAILABLE_MODELS``, an unknown
``AICODEBOX_ADAPTER`` ...) stops either at start-up with a message naming the variable and exit
status 2."""

from __future__ import annotations

import sys

from agentbox_common.logging import configure_logging
from agentbox_common.serving import serve
from agentbox_common.settings import ConfigError

from .adapters import load_adapter
from .api.settings import ApiModeSettings
from .settings import McpModeSettings


def main_mcp_mode() -> None:
    configure_logging()
    try:
        settings = McpModeSettings.from_env()
        adapter = load_adapter(settings)
    except ConfigError as exc:
        print(f"agentbox-mcp-mode: refusing to start: {exc}", file=sys.stderr)
        sys.exit(2)
    from .app import build_app  # the MCP SDK is slow to import; a bad configuration is refused first

    serve(build_app(settings, adapter), settings.host, settings.port)


def main_api() -> None:
    configure_logging()
    try:
        settings = ApiModeSettings.from_env()
        adapter = load_adapter(settings.mcp)
    except ConfigError as exc:
        print(f"agentbox-api: refusing to start: {exc}", file=sys.stderr)
        sys.exit(2)
    from .api.app import build_api_app  # the MCP SDK is slow to import; a bad configuration is refused first

    serve(build_api_app(settings, adapter), settings.host, settings.port)


if __name__ == "__main__":
    main_mcp_mode()
