"""A command in a warm persistent shell against spawning a shell, measured side by side in one run.

1. ``sandbox_execute_bash`` with ``echo hi`` through a gateway's ``/mcp`` (the shared session: one
   long-lived bash, a marker round trip) beside ``bash -c 'echo hi'`` spawned from Python with
   ``subprocess`` (target: MCP p50 at most the spawn's p50, HTTP and JSON-RPC included).
2. ``POST /v1/shell/exec`` and ``POST /v1/bash/exec`` (``echo hi`` in an existing session) beside the
   MCP figure, and ``/v1/shell/exec`` without an id (a new session each call, served by the warm spare
   bash; target: p50 at most 1.3x MCP's), with the sessions left registered afterwards.
3. The MCP door alone: ``tools/call`` of an unknown tool (a JSON-RPC error, no tool runs), so the
   door's fixed cost can be told apart from the shell's.
4. Concurrency: ``--clients`` (32) clients at once, each calling ``echo hi`` through ``/mcp`` (all in
   the shared session, so they queue for it) beside as many workers each spawning ``bash -c 'echo hi'``
   (target: MCP p99 at most 1.5x the spawns' p99); rounds alternate between the two.

Calls alternate between the contenders so all see the same noise. The gateway is ``aiod start`` in
its own process on a random loopback port; the client is a keep-alive httpx client. Every answer is
checked.

    .venv/bin/python bench/bench_shell.py [--calls 200] [--clients 32] [--rounds 3] [--per-client 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, percentile, print_latencies

HEADERS = {"Accept": "application/json, text/event-stream"}
WARMUP = 20
#: The shell plane closes a one-off REST call's session this long after its command (planes/shell).
IMPLICIT_GRACE = 30


def contenders(client: httpx.Client, url: str) -> dict[str, Callable[[], None]]:
    mcp_body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "echo hi"}},
    }
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

    def shell_exec_new() -> None:
        data = client.post(f"{url}/v1/shell/exec", json={"command": "echo hi"}).json()["data"]
        assert data["output"] == "hi\n" and data["exit_code"] == 0, data

    def bash_exec() -> None:
        data = client.post(f"{url}/v1/bash/exec", json={"command": "echo hi", "session_id": bash_id}).json()["data"]
        assert data["stdout"] == "hi\n" and data["exit_code"] == 0, data

    return {
        "MCP sandbox_execute_bash (shared session)": mcp,
        "subprocess bash -c 'echo hi' (baseline)": spawn,
        "POST /v1/shell/exec (session id)": shell_exec,
        "POST /v1/bash/exec (session id)": bash_exec,
        "POST /v1/shell/exec (no id: a new session)": shell_exec_new,
        "MCP door only (unknown tool, no shell)": door_only,
    }


async def concurrent_mcp(url: str, clients: int, per_client: int) -> list[float]:
    """Latencies of ``clients`` concurrent clients, each with its own connection, ``per_client`` calls
    each. The clients are made and connected before the clock starts: making one blocks the event
    loop for milliseconds (its TLS context), which would delay reading the others' answers."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "echo hi"}},
    }
    samples: list[float] = []

    async def call(http: httpx.AsyncClient) -> float:
        started = time.perf_counter()
        result = (await http.post(f"{url}/mcp", json=body, headers=HEADERS)).json()["result"]
        assert json.loads(result["content"][0]["text"])["output"] == "hi\n", result
        return time.perf_counter() - started

    async def client(http: httpx.AsyncClient) -> None:
        for _ in range(per_client):
            samples.append(await call(http))

    https = [httpx.AsyncClient(timeout=60) for _ in range(clients)]
    try:
        await asyncio.gather(*(call(http) for http in https))  # connected, untimed
        await asyncio.gather(*(client(http) for http in https))
    finally:
        await asyncio.gather(*(http.aclose() for http in https))
    return samples


async def concurrent_spawns(clients: int, per_client: int) -> list[float]:
    """Latencies of ``clients`` concurrent workers, each spawning ``bash -c 'echo hi'`` ``per_client`` times."""
    samples: list[float] = []

    async def worker() -> None:
        for _ in range(per_client):
            started = time.perf_counter()
            process = await asyncio.create_subprocess_exec("bash", "-c", "echo hi", stdout=subprocess.PIPE)
            out, _ = await process.communicate()
            samples.append(time.perf_counter() - started)
            assert out == b"hi\n"

    await asyncio.gather(*(worker() for _ in range(clients)))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-client", type=int, default=10)
    args = parser.parse_args()
    concurrent: dict[str, list[float]] = {
        f"MCP echo hi, {args.clients} clients (shared session)": [],
        f"bash -c 'echo hi', {args.clients} workers (baseline)": [],
    }
    with gateway() as url, httpx.Client(timeout=30) as client:
        calls = contenders(client, url)
        samples = interleaved(calls, args.calls, WARMUP)
        for _ in range(args.rounds):
            mcp_samples, spawn_samples = concurrent.values()
            mcp_samples += asyncio.run(concurrent_mcp(url, args.clients, args.per_client))
            spawn_samples += asyncio.run(concurrent_spawns(args.clients, args.per_client))
        time.sleep(IMPLICIT_GRACE + 1)
        left_registered = len(client.get(f"{url}/v1/shell/sessions").json()["data"]["sessions"])
    print(f"echo hi, N={args.calls} each, calls interleaved, {os.cpu_count()} CPUs\n")
    print_latencies(samples, width=44)
    mcp, spawn = (percentile(samples[name], 0.5) for name in list(calls)[:2])
    verdict = "met" if mcp <= spawn else "MISSED"
    print(f"\ntarget MCP p50 <= spawn p50: {verdict} ({mcp:.2f} ms vs {spawn:.2f} ms)")
    fresh = percentile(samples["POST /v1/shell/exec (no id: a new session)"], 0.5)
    verdict = "met" if fresh <= 1.3 * mcp else "MISSED"
    print(f"target /v1/shell/exec without id p50 <= 1.3x MCP p50: {verdict} (ratio {fresh / mcp:.2f})")
    print(f"sessions registered after the run: {left_registered}")
    print(f"\n{args.clients} concurrent clients, {args.per_client} calls each x {args.rounds} rounds, rounds alternate")
    print_latencies(concurrent, width=52, counts=True)
    mcp, spawn = (percentile(values, 0.99) for values in concurrent.values())
    verdict = "met" if mcp <= 1.5 * spawn else "MISSED"
    print(f"\ntarget MCP p99 <= 1.5x spawn p99: {verdict} (ratio {mcp / spawn:.2f})")


if __name__ == "__main__":
    main()
