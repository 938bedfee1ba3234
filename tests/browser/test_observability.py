"""The browser program observed as every program is (``agentbox_common.service``): ``GET /metrics``
with its own gauges and tool-call counts, and one access-log line per request. Its Chromium here is
``/bin/false``: what is observed does not need a browser that starts."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx

from tests.support.servers import console_script, free_port, stop_group

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "browser_get_text", "arguments": {}}}
LISTED = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _wait_for_health(base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "the program exited"
        try:
            httpx.get(f"{base}/health", timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "the program did not serve /health"
            time.sleep(0.05)


def test_metrics_and_the_access_log(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "AGENTBOX_BROWSER_PORT": str(port),
        "AGENTBOX_CDP_PORT": str(free_port()),
        "AGENTBOX_CHROMIUM": "/bin/false",
        "LOG_FORMAT": "json",
        "LOG_LEVEL": "INFO",
    }
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [console_script("agentbox-browser")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        _wait_for_health(base, process)
        headers = {"Accept": "application/json, text/event-stream", "x-request-id": "probe-1"}
        called = httpx.post(f"{base}/mcp", json=CALL, headers=headers, timeout=60)
        assert called.status_code == 200 and called.json()["result"]["isError"] is True
        # The one Accept rule of every MCP endpoint here: a blank header means anything.
        blank = httpx.post(f"{base}/mcp", json=LISTED, headers={"Accept": ""}, timeout=30)
        assert blank.status_code == 200 and blank.json()["result"]["tools"]
        metrics = httpx.get(f"{base}/metrics", timeout=10)
    finally:
        stop_group(process)

    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert "agentbox_chromium_up 0.0" in text and "agentbox_browser_connected 0.0" in text
    assert 'agentbox_mcp_tool_calls_total{outcome="is_error",tool="browser_get_text"} 1.0' in text
    assert 'agentbox_http_requests_total{method="POST",route="/mcp",status="200"} 2.0' in text

    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "agentbox.access"]
    call = next(line for line in access if line["request_id"] == "probe-1")
    assert (call["method"], call["route"], call["status"], call["tool"]) == ("POST", "/mcp", 200, "browser_get_text")
    assert {line["route"] for line in access} >= {"/health", "/mcp"}
