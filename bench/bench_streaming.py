"""Streaming output of long commands, and what it costs calls that do not stream.

1. Latency of a streamed chunk: the command prints its own wall clock (``$EPOCHREALTIME``) and the
   client subtracts it from the moment the chunk is parsed out of the stream; over ``/mcp`` (a
   ``tools/call`` with a ``progressToken``: the output rides ``notifications/progress`` on the SSE
   answer) and over ``POST /v1/shell/exec`` with ``Accept: text/event-stream``. Target p50 <= 50 ms.
2. With ``--gigabyte``: a command printing 1 GB streamed over ``/mcp`` progress, the gateway
   process's RSS before and after (target: no growth with the output).
3. ``sandbox_execute_bash`` with ``echo hi`` and no progress token (the JSON hot path) on this
   code's gateway beside main's gateway (``aiod start`` run from a ``git archive main`` copy given
   with ``--main``, same venv, same machine), calls interleaved. Target ratio <= 1.05. Without
   ``--main`` the second contender is a second gateway process of this code (noise floor).

Both gateways run as their own processes on random loopback ports; the client is httpx.

    git archive main | tar -x -C /tmp/agentbox-main
    .venv/bin/python bench/bench_streaming.py --main /tmp/agentbox-main [--calls 200] [--chunks 40]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import (
    BIN,
    gateway,
    interleaved,
    listening,
    percentile,
    print_latencies,
    rss_mib,
    tool_call_body,
    tree_gateway,
)
from tests.support.sse import sse_events

HEADERS = {"Accept": "application/json, text/event-stream"}
WARMUP = 20
#: Prints its wall clock as it starts each line, then waits, so every chunk is its own event.
CLOCK_COMMAND = "for i in $(seq 1 {n}); do echo $EPOCHREALTIME; sleep 0.05; done"


def lags(texts: Iterator[str]) -> list[float]:
    """Seconds from the clock each line carries to now, for every line of every chunk."""
    found = []
    for text in texts:
        now = time.time()
        found.extend(now - float(line) for line in text.split())
    return found


def mcp_lags(client: httpx.Client, url: str, chunks: int) -> list[float]:
    body = tool_call_body("sandbox_execute_bash", {"cmd": CLOCK_COMMAND.format(n=chunks)})
    body["params"]["_meta"] = {"progressToken": "bench"}

    def messages() -> Iterator[str]:
        with client.stream("POST", f"{url}/mcp", json=body, headers=HEADERS) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            for _, message in sse_events(response):
                if message.get("method") == "notifications/progress":
                    yield message["params"]["message"]
                else:
                    assert not message["result"]["isError"], message

    return lags(messages())


def rest_lags(client: httpx.Client, url: str, chunks: int) -> list[float]:
    def outputs() -> Iterator[str]:
        body = {"command": CLOCK_COMMAND.format(n=chunks)}
        with client.stream("POST", f"{url}/v1/shell/exec", json=body, headers={"Accept": "text/event-stream"}) as r:
            for name, data in sse_events(r):
                if name == "output":
                    yield data["output"]

    return lags(outputs())


def gigabyte(client: httpx.Client) -> None:
    """1 GB through ``/mcp`` progress from a fresh gateway process; prints its RSS before/after."""
    size = 1_000_000_000
    body = tool_call_body("sandbox_execute_bash", {"cmd": f"yes 0123456789abcdef | head -c {size}", "timeout": 600})
    body["params"]["_meta"] = {"progressToken": "gb"}
    with listening([os.path.join(BIN, "aiod"), "start"]) as (url, process):
        client.post(f"{url}/mcp", json=tool_call_body("sandbox_execute_bash", {"cmd": "seq 1 100000"}), headers=HEADERS)
        before = rss_mib(process.pid)
        received, started, peak = 0, time.monotonic(), before
        with client.stream("POST", f"{url}/mcp", json=body, headers=HEADERS, timeout=600) as response:
            for _, message in sse_events(response):
                if message.get("method") == "notifications/progress":
                    received += len(message["params"]["message"])
                    if received % 50_000_000 < 64_000:
                        peak = max(peak, rss_mib(process.pid))
                else:
                    output = json.loads(message["result"]["content"][0]["text"])["output"]
        elapsed = time.monotonic() - started
        after = rss_mib(process.pid)
    print(
        f"\n1 GB over /mcp progress: {elapsed:.1f} s, {received / 1e6:.0f} MB received, result output "
        f"{len(output):,} characters; gateway RSS {before:.0f} MiB before, {after:.0f} MiB after "
        f"(peak seen {peak:.0f} MiB)"
    )


def echo_hi(client: httpx.Client, url: str) -> Callable[[], None]:
    body = tool_call_body("sandbox_execute_bash", {"cmd": "echo hi"})

    def call() -> None:
        response = client.post(f"{url}/mcp", json=body, headers=HEADERS)
        assert response.headers["content-type"].startswith("application/json")
        result = response.json()["result"]
        assert json.loads(result["content"][0]["text"])["output"] == "hi\n", result

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=40, help="timed lines per streaming run")
    parser.add_argument("--runs", type=int, default=5, help="streaming runs per door")
    parser.add_argument("--main", default=None, metavar="DIR", help="a `git archive main` copy")
    parser.add_argument("--gigabyte", action="store_true", help="also stream 1 GB and watch the gateway's RSS")
    args = parser.parse_args()
    with gateway() as url, tree_gateway(args.main) as other, httpx.Client(timeout=60) as client:
        streamed = {"MCP progress (SSE)": [], "REST /v1/shell/exec (SSE)": []}
        for _ in range(args.runs):
            streamed["MCP progress (SSE)"] += mcp_lags(client, url, args.chunks)
            streamed["REST /v1/shell/exec (SSE)"] += rest_lags(client, url, args.chunks)
        baseline = "main's gateway" if args.main else "a second process of this code"
        calls = {
            "echo hi, no progress token (this code)": echo_hi(client, url),
            f"echo hi, no progress token ({baseline})": echo_hi(client, other),
        }
        samples = interleaved(calls, args.calls, WARMUP)
    print(f"1. command output -> client, {args.runs} runs x {args.chunks} lines per door, {os.cpu_count()} CPUs\n")
    print_latencies(streamed, label="door", width=44, counts=True)
    if args.gigabyte:
        with httpx.Client(timeout=60) as client:
            gigabyte(client)
    print(f"\n3. hot path: echo hi over /mcp, N={args.calls} each, interleaved\n")
    print_latencies(samples, width=56)
    ours, theirs = (percentile(values, 0.5) for values in samples.values())
    print(f"\nstreamed p50 (MCP): {percentile(streamed['MCP progress (SSE)'], 0.5):.2f} ms (target <= 50)")
    print(f"hot path p50 ratio this/{baseline}: {ours / theirs:.3f} (target <= 1.05)")


if __name__ == "__main__":
    main()
