"""``run_prompt`` as a task of MCP's tasks extension (issue 32, the 2026-07-28 wire), with the stand-in
agent: a client that declares the extension gets a handle at once, reads the answer so far with
``tasks/get`` while the agent works, and the result once it is done; ``tasks/cancel`` stops the
agent's process group."""

from __future__ import annotations

import copy
import time
from typing import Any

from tests.support.jsonrpc import MODERN_META, modern_headers
from tests.support.polling import until

from .helpers import group_members, mcp_post, serve_settings, sse_json

TASKS_META = copy.deepcopy(MODERN_META)
TASKS_META["io.modelcontextprotocol/clientCapabilities"] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def run_prompt(url: str, prompt: str) -> dict[str, Any]:
    params = {"name": "run_prompt", "arguments": {"prompt": prompt}, "_meta": copy.deepcopy(TASKS_META)}
    return sse_json(mcp_post(url, "tools/call", params, headers=modern_headers("run_prompt")))["result"]


def task(url: str, method: str, task_id: str) -> dict[str, Any]:
    params = {"taskId": task_id, "_meta": copy.deepcopy(TASKS_META)}
    return sse_json(mcp_post(url, method, params, headers=modern_headers(task_id, method)))["result"]


def test_run_prompt_runs_as_a_task_with_its_answer_so_far(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        began = time.monotonic()
        created = run_prompt(f"{base}/mcp", "FIRST working on it\nSLEEP 2\nANSWER all done")
        assert created["resultType"] == "task" and time.monotonic() - began < 1.0, created

        def so_far() -> str:
            answer = task(f"{base}/mcp", "tasks/get", created["taskId"])
            return answer["_meta"]["dev.agentbox/output"]["text"] if answer["status"] == "working" else ""

        until(lambda: "working on it" in so_far(), 5)
        done = until(
            lambda: (a := task(f"{base}/mcp", "tasks/get", created["taskId"]))["status"] == "completed" and a, 10
        )
        assert isinstance(done, dict) and done["result"]["content"][0]["text"] == "all done"


def test_cancelling_the_task_stops_the_agent(make_settings, stand_in) -> None:
    with serve_settings(make_settings()) as base:
        created = run_prompt(f"{base}/mcp", "FIRST started\nSLEEP 30\nANSWER never")
        [call] = stand_in.wait_for_calls(1)
        assert task(f"{base}/mcp", "tasks/cancel", created["taskId"])["resultType"] == "complete"
        until(lambda: task(f"{base}/mcp", "tasks/get", created["taskId"])["status"] == "cancelled", 10)
        until(lambda: not group_members(call["pgid"]), 10)


def test_a_handshake_era_client_gets_a_task_and_waits_for_its_result(make_settings) -> None:
    """2025-11-25's ``params.task`` (the TypeScript SDK's ``callToolStream``): the handle at once,
    ``tasks/result`` waits for the agent's answer."""
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    with serve_settings(make_settings()) as base:
        listed = sse_json(mcp_post(f"{base}/mcp", "tools/list", {}, headers=headers))["result"]["tools"]
        assert [t["execution"] for t in listed if t["name"] == "run_prompt"] == [{"taskSupport": "optional"}]
        params = {"name": "run_prompt", "arguments": {"prompt": "SLEEP 1\nANSWER all done"}, "task": {"ttl": 60000}}
        began = time.monotonic()
        created = sse_json(mcp_post(f"{base}/mcp", "tools/call", params, headers=headers))["result"]["task"]
        assert created["status"] == "working" and time.monotonic() - began < 1.0, created
        answer = mcp_post(f"{base}/mcp", "tasks/result", {"taskId": created["taskId"]}, headers=headers)
        result = sse_json(answer)["result"]
        assert result["content"][0]["text"] == "all done"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": created["taskId"]}
