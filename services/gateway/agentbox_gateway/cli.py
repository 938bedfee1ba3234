"""``aiod start``: run the gateway outside any container, configured like the image."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import json
import sys

from starlette.types import ASGIApp

from agentbox_common.logging import configure_logging
from agentbox_common.service import LiveWhileStarting, load_or_exit, run
from agentbox_common.settings import add_flags, flag_values

from . import liveness
from .settings import DoctorSettings, GatewaySettings

#: ``aiod start`` binds and answers ``/health`` while it imports the gateway (most of its start).
STARTING = LiveWhileStarting(health=liveness, preload=lambda: importlib.import_module("agentbox_gateway.app"))


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


def _build(settings: GatewaySettings) -> ASGIApp:
    from .app import build_app

    return build_app(settings)


def main(argv: list[str] | None = None) -> None:
    """A bad setting stops either command with exit status 2 (``agentbox_common.service``)."""
    args = _parser().parse_args(argv)
    if args.command == "start":
        run(
            "aiod",
            lambda: GatewaySettings.from_env(**flag_values(args, GatewaySettings)),
            _build,
            live_while_starting=STARTING,
        )
        return
    from .doctor import become, format_table, healthy, run_checks, sandbox_account

    configure_logging()
    doctor = load_or_exit("aiod", lambda: DoctorSettings.from_env(**flag_values(args, DoctorSettings)))
    account = sandbox_account(doctor)
    settings = load_or_exit("aiod", lambda: GatewaySettings.from_env(**flag_values(args, GatewaySettings)))
    become(account)
    checks = asyncio.run(run_checks(settings, doctor))
    print(json.dumps([dataclasses.asdict(c) for c in checks], indent=2) if args.json else format_table(checks))
    sys.exit(0 if healthy(checks) else 1)


if __name__ == "__main__":
    main()
