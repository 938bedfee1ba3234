"""MCP's tasks extension on the gateway (issue 32, the 2026-07-28 wire): a long ``sandbox_execute_bash``
from a client that declares ``io.modelcontextprotocol/tasks`` is answered at once with a task handle;
``tasks/get`` shows its output while it runs and its result once done (after the creating request
closed); ``tasks/cancel`` kills its process; an idempotency key runs a call once; a quick call is
answered as always; a client that did not declare the extension gets -32021 on ``tasks/*``."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

from tests.support.jsonrpc import MODERN_META, modern_headers, rpc
from tests.support.polling import until

EXTENSION = "io.modelcontextprotocol/tasks"
TASKS_META = copy.deepcopy(MODERN_META)
TASKS_META["io.modelcontextprotocol/clientCapabilities"] = {"extensions": {EXTENSION: {}}}


def call(mcp_url: str, command: str, *, key: str | None = None, tasks: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = copy.deepcopy(TASKS_META if tasks else MODERN_META)
    if key is not None:
        meta["dev.agentbox/idempotency-key"] = key
    params = {"name": "sandbox_execute_bash", "arguments": {"cmd": command, "timeout": 60}, "_meta": meta}
    answer = rpc(mcp_url, "tools/call", params, headers=modern_headers("sandbox_execute_bash"))
    assert answer.status_code == (400 if "error" in answer.json() else 200), answer.text
    return answer.json()


def task_request(mcp_url: str, method: str, task_id: str, *, tasks: bool = True) -> dict[str, Any]:
    params = {"taskId": task_id, "_meta": copy.deepcopy(TASKS_META if tasks else MODERN_META)}
    return rpc(mcp_url, method, params, headers=modern_headers(task_id, method)).json()


def test_a_long_command_is_a_task_with_output_while_it_runs(mcp_url: str, tmp_path: Path) -> None:
    began = time.monotonic()
    created = call(mcp_url, "for i in 1 2 3; do echo line $i; sleep 1; done")["result"]
    assert time.monotonic() - began < 1.0
    assert created["resultType"] == "task" and created["status"] == "working", created
    assert created["ttlMs"] > 0 and created["pollIntervalMs"] > 0 and created["createdAt"].endswith("Z")
    task_id = created["taskId"]

    def printed() -> str:
        answer = task_request(mcp_url, "tasks/get", task_id)["result"]
        assert answer["resultType"] == "complete"
        return answer["_meta"]["dev.agentbox/output"]["text"] if answer["status"] == "working" else ""

    until(lambda: "line 1" in printed(), 5)
    done = until(
        lambda: (a := task_request(mcp_url, "tasks/get", task_id)["result"])["status"] == "completed" and a, 10
    )
    assert isinstance(done, dict)
    assert "line 3" in done["result"]["content"][0]["text"] and not done["result"]["isError"]


def test_cancel_kills_the_tasks_process(mcp_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    created = call(mcp_url, f"echo $$ > {marker}; sleep 60")["result"]
    until(lambda: marker.exists() and marker.read_text().strip(), 10)
    shell = int(marker.read_text())
    assert task_request(mcp_url, "tasks/cancel", created["taskId"])["result"]["resultType"] == "complete"
    answer = until(
        lambda: (a := task_request(mcp_url, "tasks/get", created["taskId"])["result"])["status"] != "working" and a, 10
    )
    assert isinstance(answer, dict) and answer["status"] == "cancelled"
    until(lambda: not Path(f"/proc/{shell}").exists() or "sleep 60" not in _children(shell), 10)


def _children(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return ""


def test_the_same_idempotency_key_runs_the_call_once(mcp_url: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    command = f"echo once >> {ran}; sleep 1"
    first = call(mcp_url, command, key="key-1")["result"]
    second = call(mcp_url, command, key="key-1")["result"]
    assert second["taskId"] == first["taskId"]
    until(lambda: task_request(mcp_url, "tasks/get", first["taskId"])["result"]["status"] == "completed", 10)
    assert ran.read_text() == "once\n"
    refused = call(mcp_url, "echo other", key="key-1")
    assert refused["error"]["code"] == -32602


def test_a_quick_call_is_answered_as_always(mcp_url: str) -> None:
    answer = call(mcp_url, "echo quick")["result"]
    assert answer.get("resultType", "complete") == "complete" and "quick" in answer["content"][0]["text"]


def test_tasks_methods_need_the_extension_and_a_known_task(mcp_url: str) -> None:
    created = call(mcp_url, "sleep 2")["result"]
    refused = task_request(mcp_url, "tasks/get", created["taskId"], tasks=False)
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}
    assert task_request(mcp_url, "tasks/get", "no-such-task")["error"]["code"] == -32602
    assert task_request(mcp_url, "tasks/cancel", created["taskId"])["result"]["resultType"] == "complete"


def test_a_client_without_the_extension_gets_the_result_as_before(mcp_url: str) -> None:
    answer = call(mcp_url, "sleep 0.5; echo plain", tasks=False)["result"]
    assert "plain" in answer["content"][0]["text"]


def test_discover_declares_the_extension(mcp_url: str) -> None:
    answer = rpc(
        mcp_url, "server/discover", {"_meta": copy.deepcopy(MODERN_META)}, headers=modern_headers("", "server/discover")
    )
    assert EXTENSION in answer.json()["result"]["capabilities"]["extensions"], answer.text
