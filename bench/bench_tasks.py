"""MCP tasks (issue 32): what the tasks extension costs a call, in one run, interleaved.

1. ``sandbox_execute_bash`` ``echo hi`` from a 2026-07-28 client without the extension (the plain
   call, the baseline) beside the same call declaring it (a quick call: answered as a plain result
   within the 0.2 s window, through the task machinery).
2. A long command (``sleep 30``) declaring the extension: the time to its task handle, and to the
   first ``tasks/get`` answered after it (create-and-first-poll); each task is cancelled after.
3. The same from a handshake-era client (2025-11-25's ``params.task``, the TypeScript SDK's way): the
   handle comes at once, without the window a 2026-07-28 call waits in.

The gateway is ``aiod start`` in its own process on a random loopback port; every answer is checked.

    .venv/bin/python bench/bench_tasks.py [--calls 200] [--tasks 30]
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, print_latencies
from tests.support.jsonrpc import MODERN_META, modern_headers

WARMUP = 20
TASKS_META = copy.deepcopy(MODERN_META)
TASKS_META["io.modelcontextprotocol/clientCapabilities"] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def post(client: httpx.Client, url: str, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = client.post(f"{url}/mcp", json=body, headers={**ACCEPT, **modern_headers(name, method)}).json()
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def call(client: httpx.Client, url: str, command: str, meta: dict[str, Any]) -> dict[str, Any]:
    params = {"name": "sandbox_execute_bash", "arguments": {"cmd": command}, "_meta": copy.deepcopy(meta)}
    return post(client, url, "tools/call", params, "sandbox_execute_bash")


def quick_calls(client: httpx.Client, url: str) -> dict[str, Callable[[], None]]:
    def plain() -> None:
        assert "hi" in call(client, url, "echo hi", MODERN_META)["content"][0]["text"]

    def declared() -> None:
        assert "hi" in call(client, url, "echo hi", TASKS_META)["content"][0]["text"]

    return {"echo hi, plain 2026-07-28 call (baseline)": plain, "echo hi, tasks extension declared": declared}


def task_round(client: httpx.Client, url: str) -> tuple[float, float]:
    """Seconds to the handle of a long command, and to the first tasks/get answered after it."""
    started = time.perf_counter()
    created = call(client, url, "sleep 30", TASKS_META)
    handle = time.perf_counter() - started
    assert created["resultType"] == "task", created
    params = {"taskId": created["taskId"], "_meta": copy.deepcopy(TASKS_META)}
    polled = post(client, url, "tasks/get", params, created["taskId"])
    first_poll = time.perf_counter() - started
    assert polled["status"] == "working", polled
    post(client, url, "tasks/cancel", params, created["taskId"])
    return handle, first_poll


HANDSHAKE = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def handshake_round(client: httpx.Client, url: str) -> tuple[float, float]:
    """The same as :func:`task_round` on the handshake-era wire."""

    def post(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer = client.post(f"{url}/mcp", json=body, headers=HANDSHAKE).json()
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    started = time.perf_counter()
    created = post("tools/call", {"name": "sandbox_execute_bash", "arguments": {"cmd": "sleep 30"}, "task": {}})
    handle = time.perf_counter() - started
    task_id = created["task"]["taskId"]
    assert post("tasks/get", {"taskId": task_id})["status"] == "working"
    first_poll = time.perf_counter() - started
    assert post("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"
    return handle, first_poll


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=30)
    args = parser.parse_args()
    with gateway({"AGENTBOX_BROWSER_PROXY_PORT": "0"}) as url, httpx.Client(timeout=60) as client:
        samples = interleaved(quick_calls(client, url), args.calls, WARMUP)
        print(f"N={args.calls} each, calls interleaved, {os.cpu_count()} CPUs\n")
        print_latencies(samples, width=46)
        rounds = [(task_round(client, url), handshake_round(client, url)) for _ in range(args.tasks)]
        handles = {"long command: task handle": [r[0][0] for r in rounds]}
        handles["long command: handle + first tasks/get"] = [r[0][1] for r in rounds]
        handles["2025-11-25 params.task: task handle"] = [r[1][0] for r in rounds]
        handles["2025-11-25 params.task: handle + tasks/get"] = [r[1][1] for r in rounds]
        print(f"\nN={args.tasks} tasks (each cancelled after its first poll)\n")
        print_latencies(handles, width=46)


if __name__ == "__main__":
    main()
