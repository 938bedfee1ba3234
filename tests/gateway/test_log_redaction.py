"""``aiod start`` as shipped, with a key, in text and JSON log formats: a key sent under a
percent-encoded parameter name (which authenticates) or a refused look-alike name never reaches the
log, and a path carrying CR LF or an ANSI escape cannot forge a line (issue 26 items 8 and 9)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.support.servers import console_script, free_port, raw_get, run_command, stop_group

KEY = "log-redaction-key-4242"


@pytest.fixture(params=["text", "json"])
def aiod(request: pytest.FixtureRequest, tmp_path) -> Iterator[tuple[int, subprocess.Popen, str]]:
    port = free_port()
    env = {
        "AIO_API_KEY": KEY,
        "LOG_LEVEL": "INFO",
        "LOG_FORMAT": "json" if request.param == "json" else "",
        "AGENTBOX_BROWSER_PROXY_PORT": str(free_port()),
        "HOME": str(tmp_path),
    }
    with run_command(
        [console_script("aiod"), "start", "--port", str(port)], env=env, ready_url=f"http://127.0.0.1:{port}/health"
    ) as process:
        yield port, process, request.param


def read_logs(process: subprocess.Popen) -> str:
    stop_group(process)
    assert process.stdout is not None
    return process.stdout.read().decode(errors="replace")


def test_a_key_under_an_encoded_or_refused_name_stays_out_of_the_log(aiod: tuple[int, subprocess.Popen, str]) -> None:
    port, process, _ = aiod
    assert raw_get(port, f"/v1/sandbox?api%5Fkey={KEY}") == 200  # the gateway decodes the name: it authenticates
    assert raw_get(port, f"/v1/sandbox?%61pi_key={KEY}") == 200
    assert raw_get(port, f"/v1/sandbox?api_key%00={KEY}") == 401  # refused, but it is the real key
    assert raw_get(port, f"/v1/sandbox?x=1&api%255Fkey={KEY}") == 401
    with connect(f"ws://127.0.0.1:{port}/v1/shell/ws?api%5Fkey={KEY}", proxy=None) as terminal:
        terminal.send(json.dumps({"type": "input", "data": "exit\n"}))
    logs = read_logs(process)
    assert KEY not in logs, logs
    assert logs.count("[redacted len=22 sha256=") >= 6, logs
    assert '"WebSocket /v1/shell/ws?api%5Fkey=[redacted' in logs.replace('\\"', '"'), logs


def test_a_path_cannot_forge_a_line_or_send_escapes(aiod: tuple[int, subprocess.Popen, str]) -> None:
    port, process, form = aiod
    assert raw_get(port, "/nothing%0d%0aFORGED%20line%0aALSO%1b[31mred%c2%9b") == 401
    with pytest.raises(InvalidStatus):  # uvicorn logs a WebSocket's path too
        connect(f"ws://127.0.0.1:{port}/v1/shell/ws%0d%0aFORGED-WS", proxy=None)
    logs = read_logs(process)
    lines = logs.splitlines()
    assert not [line for line in lines if line.startswith(("FORGED", "ALSO"))], logs
    assert "\x1b" not in logs and "\x9b" not in logs
    forged = [line.replace("\\\\", "\\") for line in lines if "FORGED line" in line]
    assert len(forged) == 1 and "/nothing\\x0d\\x0aFORGED line\\x0aALSO\\x1b[31mred\\x9b" in forged[0], logs
    assert any("/v1/shell/ws\\x0d\\x0aFORGED-WS" in line.replace("\\\\", "\\") for line in lines), logs
    if form == "json":
        assert all(json.loads(line) for line in lines)
