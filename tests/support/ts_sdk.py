"""The TypeScript MCP SDK (``@modelcontextprotocol/sdk`` v1, the client most hosts are built on) from
the npm registry into the test cache, once, and a runner for ``ts_client/mcp_client.mjs``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.conformance import node22, npm_package

TS_SDK_VERSION = "1.32.2"
CLIENT_SCRIPT = Path(__file__).with_name("ts_client") / "mcp_client.mjs"


def ts_sdk() -> Path:
    """The SDK's package folder at :data:`TS_SDK_VERSION`."""
    return npm_package("@modelcontextprotocol/sdk", TS_SDK_VERSION)


def client_command(scenario: str, url: str, arguments: dict[str, Any] | None = None) -> list[str]:
    return [node22(), str(CLIENT_SCRIPT), scenario, url, json.dumps(arguments or {})]


def client_env(key: str | None = None) -> dict[str, str]:
    env = {**os.environ, "TS_SDK": str(ts_sdk())}
    env.pop("AGENTBOX_KEY", None)
    if key is not None:
        env["AGENTBOX_KEY"] = key
    return env


def run_client(scenario: str, url: str, arguments: dict[str, Any] | None = None, timeout: float = 90) -> list[Any]:
    """Run a scenario to its end; the JSON lines it printed."""
    run = subprocess.run(
        client_command(scenario, url, arguments), env=client_env(), capture_output=True, text=True, timeout=timeout
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
