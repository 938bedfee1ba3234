"""``aiod start``: run the gateway outside any container, configured like the image."""

from __future__ import annotations

import argparse
import sys

from agentbox_common.logging import configure_logging
from agentbox_common.serving import serve
from agentbox_common.settings import ConfigError, parse_json_object

from .app import build_app
from .settings import DEFAULT_PORT, GatewaySettings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiod", description="agentbox sandbox daemon (MCP + REST gateway)")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="serve /mcp, /v1 and /health")
    start.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    start.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    start.add_argument("--mcp-servers", default=None, metavar="JSON", help="same as EXTRA_MCP_SERVERS")
    start.add_argument("--api-key", default=None, metavar="KEY", help="same as AIO_API_KEY")
    return parser

def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    configure_logging()
    try:
        mcp_servers = None if args.mcp_servers is None else parse_json_object("--mcp-servers", args.mcp_servers)
        settings = GatewaySettings.from_env(
            host=args.host, port=args.port, api_key=args.api_key, mcp_servers=mcp_servers
        )
    except ConfigError as exc:
        sys.exit(f"aiod: {exc}")

    serve(build_app(settings), settings.host, settings.port)

if __name__ == "__main__":
    main()
