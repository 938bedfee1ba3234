"""``aiod start``: run the gateway outside any container, configured like the image."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys

from agentbox_common.logging import configure_logging, redact
from agentbox_common.serving import serve
from agentbox_common.settings import ConfigError, add_flags, flag_values

from .app import build_app
from .doctor import become, format_table, healthy, run_checks, sandbox_account
from .settings import DoctorSettings, GatewaySettings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aiod", description="agentbox sandbox daemon (MCP + REST gateway)")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="serve /mcp, /v1 and /health")
    add_flags(start, GatewaySettings)
    doctor = commands.add_parser(
        "doctor", help="check what the gateway needs and can use; exit 1 when a required part is missing"
    )
    add_flags(doctor, GatewaySettings, fields=("mcp_servers",))
    add_flags(doctor, DoctorSettings)
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    configure_logging()
    try:
        doctor = DoctorSettings.from_env(**flag_values(args, DoctorSettings)) if args.command == "doctor" else None
        account = sandbox_account(doctor) if doctor is not None else None
        settings = GatewaySettings.from_env(**flag_values(args, GatewaySettings))
    except ConfigError as exc:
        sys.exit(f"aiod: {redact(str(exc))}")

    if doctor is not None:
        become(account)
        checks = asyncio.run(run_checks(settings, doctor))
        print(json.dumps([dataclasses.asdict(c) for c in checks], indent=2) if args.json else format_table(checks))
        sys.exit(0 if healthy(checks) else 1)
    serve(build_app(settings), settings.host, settings.port)


if __name__ == "__main__":
    main()
