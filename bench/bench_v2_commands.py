"""``/v2/commands`` beside the ``/v1`` and MCP doors to the same shell plane, in one run.

1. ``echo hi`` through ``POST /v2/commands`` in a named session (``session_id``), through
   ``POST /v1/shell/exec`` in a session of its own and through MCP ``sandbox_execute_bash`` (the
   shared session): the same work, a command in a warm shell, behind three doors (target: ``/v2``
   p50 at most ``/v1``'s p50, 10 % noise allowed). ``POST /v2/commands`` without a session (a shell
   of its own, started and closed per command) is timed apart, after them, for what a fresh shell
   costs: the shell it closes after each answer would otherwise burden the next contender's call.
2. NDJSON: ``POST /v2/commands`` with ``Accept: application/x-ndjson`` for
   ``echo hi; sleep 0.05; echo bye``: the time to the first byte (the ``started`` line), to the
   first ``stdout`` line and to the ``result`` line.

Calls alternate between the contenders so all see the same noise, in two passes (the table shows
each pass, so drift between them is visible). The gateway is ``aiod start`` in its own process on a
random loopback port; the client is a keep-alive httpx client. Every answer is checked.

    .venv/bin/python bench/bench_v2_commands.py [--calls 200] [--streams 100]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, percentile, print_latencies, tool_call_body

HEADERS = {"Accept": "application/json, text/event-stream"}
NDJSON = {"Accept": "application/x-ndjson"}
WARMUP = 20
PASSES = 2
V2_SESSION = "POST /v2/commands (session_id)"
V1_SHELL = "POST /v1/shell/exec (session id)"


def contenders(client: httpx.Client, url: str) -> tuple[dict[str, Callable[[], None]], dict[str, Callable[[], None]]]:
    """The warm contenders (interleaved), and the command in a shell of its own (timed apart)."""
    shell_id = client.post(f"{url}/v1/shell/sessions/create", json={}).json()["data"]["session_id"]
    v2_id = client.post(f"{url}/v2/commands/sessions", json={}).json()["data"]["session_id"]
    mcp_body = tool_call_body("sandbox_execute_bash", {"cmd": "echo hi"})

    def v2_session() -> None:
        data = client.post(f"{url}/v2/commands", json={"command": "echo hi", "session_id": v2_id}).json()["data"]
        assert data["stdout"] == "hi\n" and data["exit_code"] == 0, data

    def v2_own() -> None:
        data = client.post(f"{url}/v2/commands", json={"command": "echo hi"}).json()["data"]
        assert data["stdout"] == "hi\n" and data["exit_code"] == 0, data

    def v1_shell() -> None:
        data = client.post(f"{url}/v1/shell/exec", json={"command": "echo hi", "id": shell_id}).json()["data"]
        assert data["output"] == "hi\n" and data["exit_code"] == 0, data

    def mcp() -> None:
        result = client.post(f"{url}/mcp", json=mcp_body, headers=HEADERS).json()["result"]
        assert not result["isError"] and json.loads(result["content"][0]["text"])["output"] == "hi\n", result

    return {
        V2_SESSION: v2_session,
        V1_SHELL: v1_shell,
        "MCP sandbox_execute_bash (shared session)": mcp,
    }, {"POST /v2/commands (a shell of its own)": v2_own}


def ndjson_timings(client: httpx.Client, url: str, session_id: str) -> tuple[float, float, float]:
    """Seconds to the first byte, the first stdout line and the result line of one streamed command."""
    body = {"command": "echo hi; sleep 0.05; echo bye", "session_id": session_id}
    started = time.perf_counter()
    first_byte = first_stdout = result = 0.0
    with client.stream("POST", f"{url}/v2/commands", json=body, headers=NDJSON) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            now = time.perf_counter() - started
            if not line:
                continue
            kind = json.loads(line)["type"]
            if kind == "started":
                first_byte = now
            elif kind == "stdout" and not first_stdout:
                first_stdout = now
            elif kind == "result":
                result = now
                assert json.loads(line)["exit_code"] == 0, line
    assert 0 < first_byte <= first_stdout < result, (first_byte, first_stdout, result)
    return first_byte, first_stdout, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--streams", type=int, default=100)
    args = parser.parse_args()
    passes: list[dict[str, list[float]]] = []
    streams: dict[str, list[float]] = {"NDJSON first byte (started line)": [], "NDJSON first stdout line": []}
    streams["NDJSON result line (sleep 0.05 inside)"] = []
    with gateway() as url, httpx.Client(timeout=30) as client:
        calls, fresh = contenders(client, url)
        for number in range(PASSES):
            passes.append(interleaved(calls, args.calls, WARMUP if number == 0 else 0))
        own = interleaved(fresh, args.calls, WARMUP)
        session_id = client.post(f"{url}/v2/commands/sessions", json={}).json()["data"]["session_id"]
        for _ in range(args.streams):
            for samples, value in zip(streams.values(), ndjson_timings(client, url, session_id), strict=True):
                samples.append(value)
    print(f"echo hi, N={args.calls} each per pass, calls interleaved, {os.cpu_count()} CPUs")
    for number, samples in enumerate(passes, 1):
        print(f"\npass {number}")
        print_latencies(samples, width=44)
    merged = {name: [value for samples in passes for value in samples[name]] for name in calls}
    v2, v1 = percentile(merged[V2_SESSION], 0.5), percentile(merged[V1_SHELL], 0.5)
    verdict = "met" if v2 <= 1.1 * v1 else "MISSED"
    print("\napart, after the passes")
    print_latencies(own, width=44)
    print(f"\ntarget /v2 p50 <= /v1 p50 (10% noise): {verdict} ({v2:.2f} ms vs {v1:.2f} ms, both passes)")
    print(f"\nNDJSON, N={args.streams}, in a session")
    print_latencies(streams, width=44)


if __name__ == "__main__":
    main()
