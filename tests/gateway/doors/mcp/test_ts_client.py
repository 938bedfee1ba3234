"""The TypeScript SDK's client (v1, the handshake era: most hosts are built on it) against a real
gateway: a 30 s command as a task through ``callToolStream`` (handle in under a second, output while
it runs, cancel kills its process), a result read by another connection after the creating request
closed, an idempotency key that runs a command once, and ``notifications/tools/list_changed`` on the
GET stream when an upstream starts and when it is killed."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.upstreams.test_aggregation_fakes import upstream_process
from tests.support.polling import until
from tests.support.ts_sdk import client_command, client_env, run_client

pytestmark = pytest.mark.node22

BASH = "sandbox_execute_bash"


def bash(command: str) -> dict[str, Any]:
    return {"tool": BASH, "arguments": {"cmd": command, "timeout": 120}}


def alive(pid: int) -> bool:
    try:
        return "sleep" in Path(f"/proc/{pid}/cmdline").read_text() or bool(
            Path(f"/proc/{pid}/task/{pid}/children").read_text().strip()
        )
    except OSError:
        return False


def test_a_30s_command_streams_as_a_task_and_cancel_kills_it(mcp_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    command = f"echo $$ > {marker}; for i in $(seq 30); do echo tick $i; sleep 1; done"
    seen = run_client("stream", mcp_url, {**bash(command), "cancelOn": "tick 2"})
    first, created = seen[0], seen[1]
    assert first["taskSupport"] == "optional"
    assert first["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert created["ms"] < 1000 and created["created"]["status"] == "working"
    outputs = [line["output"] for line in seen if "status" in line and line["status"] == "working"]
    assert any("tick 1" in text for text in outputs), seen
    cancels = [line["cancel"] for line in seen if "cancel" in line]
    assert len(cancels) == 1 and cancels[0]["status"] == "cancelled"
    assert "cancelled" in seen[-1]["error"]
    shell = int(marker.read_text())
    until(lambda: not alive(shell), 15)


def test_the_result_is_read_by_another_connection_after_the_creating_one_closed(mcp_url: str) -> None:
    [created] = run_client("create", mcp_url, bash("sleep 2; echo made by the task"))
    task_id = created["task"]["taskId"]
    assert created["task"]["status"] == "working" and created["task"]["ttl"] > 0
    answer, listed = run_client("result", mcp_url, {"taskId": task_id})
    result = answer["result"]
    assert "made by the task" in result["content"][0]["text"] and not result["isError"]
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert task_id in listed["listed"]


def test_the_same_idempotency_key_runs_the_command_once(mcp_url: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    call = {**bash(f"echo once >> {ran}; sleep 1"), "key": "ts-key-1"}
    [first] = run_client("create", mcp_url, call)
    [second] = run_client("create", mcp_url, call)
    assert first["task"]["taskId"] == second["task"]["taskId"]
    run_client("result", mcp_url, {"taskId": first["task"]["taskId"]})
    assert ran.read_text() == "once\n"


class Listener:
    """The ``listen`` scenario in the background: each JSON line it prints, in a queue."""

    def __init__(self, url: str) -> None:
        self.process = subprocess.Popen(
            client_command("listen", url), env=client_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(json.loads(line))

    def next(self, timeout: float = 30) -> dict[str, Any]:
        return self.lines.get(timeout=timeout)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(20)


def test_an_upstream_starting_and_dying_is_one_notification_each(aggregating_gateway: str, upstream_port: int) -> None:
    mcp_url = f"{aggregating_gateway}/mcp"
    listener = Listener(mcp_url)
    try:
        assert listener.next() == {"listening": True}
        # a listing before the upstream starts, so its arrival is a change whichever comes first
        listed = httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
        assert "later_" not in listed.text
        with upstream_process(upstream_port, "later", ["ping"]) as process:
            arrived = listener.next()["changed"]
            assert "later_ping" in arrived
            process.kill()
            process.wait()
            gone = listener.next()["changed"]
            assert "later_ping" not in gone and gone == [name for name in arrived if name != "later_ping"]
        with pytest.raises(queue.Empty):
            listener.next(timeout=3)
    finally:
        listener.close()
