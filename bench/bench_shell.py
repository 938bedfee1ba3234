"""A command in a warm persistent shell against spawning a shell, measured side by side in one run.

1. ``sandbox_execute_bash`` with ``echo hi`` through a gateway's ``/mcp`` (the shared session: one
   long-lived bash, a marker round trip) beside ``bash -c 'echo hi'`` spawned from Python with
   ``subprocess`` (target: MCP p50 at most the spawn's p50, HTTP and JSON-RPC included).
2. ``POST /v1/shell/exec`` and ``POST /v1/bash/exec`` (``echo hi`` in an existing session) beside the
   MCP figure.
3. The MCP door alone: ``tools/call`` of an unknown tool (a JSON-RPC error, no tool runs), so the
   door's fixed cost can be told apart from the shell's.

Calls alternate between the contenders so all see the same noise. The gateway is ``aiod start`` in
its own process on a random loopback port; the client is a keep-alive httpx client. Every answer is
checked.

    .venv/bin/python bench/bench_shell.py [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, percentile, print_latencies

HEADERS = {"Accept": "application/json, text/event-stream"}
WARMUP = 20


def contenders(client: httpx.Client, url: str) -> dict[str, Callable[[], None]]:
    mcp_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "echo hi"}}}
    shell_id = client.post(f"{url}/v1/shell/sessions/create", json={}).json()["data"]["session_id"]
    bash_id = client.post(f"{url}/v1/bash/sessions/create", json={}).json()["data"]["session_id"]

    def mcp() -> None:
        result = client.post(f"{url}/mcp", json=mcp_body, headers=HEADERS).json()["result"]
        assert not result["isError"] and json.loads(result["content"][0]["text"])["output"] == "hi\n", result

    def door_only() -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "no_such_tool"}}
        assert client.post(f"{url}/mcp", json=body, headers=HEADERS).json()["error"]["code"] == -32602

    def spawn() -> None:
        assert subprocess.run(["bash", "-c", "echo hi"], capture_output=True).stdout == b"hi\n"

    def shell_exec() -> None:
        data = client.post(f"{url}/v1/shell/exec", json={"command": "echo hi", "id": shell_id}).json()["data"]
        assert data["output"] == "hi\n" and data["exit_code"] == 0, data

    def bash_exec() -> None:
        data = client.post(f"{url}/v1/bash/exec", json={"command": "echo hi", "session_id": bash_id}).json()["data"]
        assert data["stdout"] == "hi\n" and data["exit_code"] == 0, data

    return {
        "MCP sandbox_execute_bash (shared session)": mcp,
        "subprocess bash -c 'echo hi' (baseline)": spawn,
        "POST /v1/shell/exec (session id)": shell_exec,
        "POST /v1/bash/exec (session id)": bash_exec,
        "MCP door only (unknown tool, no shell)": door_only,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with gateway() as url, httpx.Client(timeout=30) as client:
        calls = contenders(client, url)
        samples = interleaved(calls, args.calls, WARMUP)
    print(f"echo hi, N={args.calls} each, calls interleaved, {os.cpu_count()} CPUs\n")
    print_latencies(samples, width=44)
    mcp, spawn = (percentile(samples[name], 0.5) for name in list(calls)[:2])
    verdict = "met" if mcp <= spawn else "MISSED"
    print(f"\ntarget MCP p50 <= spawn p50: {verdict} ({mcp:.2f} ms vs {spawn:.2f} ms)")


if __name__ == "__main__":
    main()
