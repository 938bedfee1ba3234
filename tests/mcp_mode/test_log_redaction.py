"""MCP mode as shipped (``agentbox-mcp-mode``): its token sent under an encoded or look-alike
parameter name never reaches the log, and a path cannot forge a line (issue 26 items 8 and 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.servers import console_script, free_port, raw_get, run_command, stop_group

from .helpers import StandIn

TOKEN = "mcp-mode-token-31337"


@pytest.mark.parametrize("form", ["text", "json"])
def test_token_and_forged_lines_stay_out_of_the_log(tmp_path: Path, stand_in: StandIn, form: str) -> None:
    port = free_port()
    env = {
        "AICODEBOX_WORKSPACE": str(tmp_path / "ws"),
        "AICODEBOX_MCP_MODE_PORT": str(port),
        "AICODEBOX_MCP_MODE_HOST": "127.0.0.1",
        "AICODEBOX_MCP_MODE_TOKEN": TOKEN,
        "AICODEBOX_AGENT_BINARY": str(stand_in.path),
        "LOG_LEVEL": "INFO",
        "LOG_FORMAT": "json" if form == "json" else "",
    }
    command = [console_script("agentbox-mcp-mode")]
    with run_command(command, env=env, ready_url=f"http://127.0.0.1:{port}/healthz") as process:
        for name in ("apiTok%65n", "apiToken%00", "apitoken", "api%5Ftoken"):
            assert raw_get(port, f"/healthz?{name}={TOKEN}") == 200
        raw_get(port, "/mcp%0d%0aFORGED%20line%1b[2J")
        stop_group(process)
        assert process.stdout is not None
        logs = process.stdout.read().decode(errors="replace")
    assert TOKEN not in logs, logs
    assert logs.count("[redacted len=20 sha256=") >= 4, logs
    assert not [line for line in logs.splitlines() if line.startswith("FORGED")] and "\x1b" not in logs, logs
    assert "/mcp\\x0d\\x0aFORGED line\\x1b[2J" in logs.replace("\\\\", "\\"), logs
