"""Detached apps (issue 28, item 12): ``detach`` on ``/v1/shell/exec`` and ``sandbox_execute_bash``
starts an app outside every shell session, so ``shell.cleanup_all_sessions()`` (the agent-sandbox SDK)
leaves it serving, while an app a session started (``setsid nohup … &``) still dies with it. A real
gateway (``aiod start``), the SDK and an MCP client over HTTP, the test app on loopback."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from agent_sandbox import Sandbox

from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.preview import APP
from tests.support.servers import console_script, free_port, run_command

KEY = "detach-key-9b20"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    port = free_port()
    args = [console_script("aiod"), "start", "--port", str(port)]
    env = {"AIO_API_KEY": KEY, "AGENTBOX_BROWSER_PROXY_PORT": "0"}
    with run_command(args, env=env, ready_url=f"http://127.0.0.1:{port}/health"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def client(url: str) -> Sandbox:
    return Sandbox(base_url=url, headers=AUTH, timeout=60)


def serve(port: int) -> str:
    return f"echo starting {port}; exec {sys.executable} {APP} --port {port}"


def answers(port: int) -> bool:
    try:
        return shared_http.get(f"http://127.0.0.1:{port}/ready", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def wait_for(condition: object, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_a_detached_app_survives_cleanup_all_sessions_and_a_session_app_does_not(url: str, client: Sandbox) -> None:
    rest_port, mcp_port, session_port = free_port(), free_port(), free_port()
    pids: list[int] = []
    try:
        client.shell.create_session(id="work", exec_dir="/tmp")
        detached = client.shell.exec_command(
            command=serve(rest_port), id="work", request_options={"additional_body_parameters": {"detach": True}}
        ).data
        assert detached is not None and detached.status == "running", detached
        extra = detached.model_extra or {}
        pids.append(extra["pid"])
        assert extra["detached"] is True and extra["cwd"] == "/tmp"  # the session's directory

        result = tool_json(
            call_tool(f"{url}/mcp", "sandbox_execute_bash", {"cmd": serve(mcp_port), "detach": True}, headers=AUTH)
        )
        pids.append(result["pid"])
        assert result["status"] == "running" and result["detached"] is True

        started = client.shell.exec_command(
            command=f"setsid nohup {serve(session_port)} >/dev/null 2>&1 &", id="other", timeout=20
        ).data
        assert started is not None and started.exit_code == 0
        for port in (rest_port, mcp_port, session_port):
            assert wait_for(lambda port=port: answers(port)), port
        assert Path(extra["log_file"]).read_text().startswith(f"starting {rest_port}")
        for pid in pids:  # outside every session: its own process group and kernel session
            assert os.getpgid(pid) == pid and os.getsid(pid) == pid

        client.shell.cleanup_all_sessions()
        assert wait_for(lambda: not answers(session_port))  # the session's app died with it, as before
        assert answers(rest_port) and answers(mcp_port)
        preview = shared_http.get(f"{url}/proxy/{rest_port}/ready", headers=AUTH)
        assert preview.status_code == 200  # and its preview still works
        listed = shared_http.get(f"{url}/v1/sandbox", headers=AUTH).json()["detail"]["system"]["previews"]
        assert {rest_port, mcp_port} <= {entry["port"] for entry in listed}
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def test_detach_refuses_timeouts_and_starts_nothing(url: str) -> None:
    port = free_port()
    body = {"command": serve(port), "detach": True, "hard_timeout": 5}
    refused = shared_http.post(f"{url}/v1/shell/exec", headers=AUTH, json=body)
    assert refused.status_code == 400 and "detach" in refused.json()["message"], refused.text
    args = {"cmd": serve(port), "detach": True, "timeout": 5}
    result = call_tool(f"{url}/mcp", "sandbox_execute_bash", args, headers=AUTH)
    assert result["isError"] is True and "detach" in tool_text(result)
    empty = shared_http.post(f"{url}/v1/shell/exec", headers=AUTH, json={"command": "  ", "detach": True})
    assert empty.status_code == 400 and "empty" in empty.json()["message"]
    missing = shared_http.post(
        f"{url}/v1/shell/exec", headers=AUTH, json={"command": "true", "detach": True, "exec_dir": "/nope"}
    )
    assert missing.status_code == 400 and "/nope" in missing.json()["message"]
    time.sleep(1)
    assert not answers(port)
