"""Start-up and idle memory of the gateway beside a one-tool SDK ``MCPServer``, in one run.

For each round, both servers are started in turn as fresh processes on free loopback ports (uvicorn
via ``agentbox_common.serving.serve`` for both), and timed from the spawn to the first ``tools/list``
answered over ``/mcp``; their RSS is read a second after that. Rounds alternate between the two so
both see the same machine load. Targets (issue 18): ``aiod start`` at most 1.25x the MCPServer's
time to its first ``tools/list``, and at most 1.25x its idle RSS. The REST door is built on its
first request, so the gateway's first REST call (``GET /v1/sandbox``, after the RSS is read) pays
for it: that call's time is printed too.

    .venv/bin/python bench/bench_startup.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import BIN
from tests.support.servers import free_port, stop_group

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream"}


def run_mcpserver(port: int) -> None:
    """Child mode: the SDK's high-level server with one tool, stateless JSON answers."""
    from mcp.server import MCPServer
    from starlette.applications import Starlette

    from agentbox_common.serving import serve

    mcp = MCPServer("one-tool")

    @mcp.tool(description="Echo a text.")
    def echo(text: str) -> str:
        return text

    inner = mcp.streamable_http_app(json_response=True, stateless_http=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    serve(Starlette(routes=inner.routes, lifespan=lifespan), "127.0.0.1", port)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_once(args: list[str], first_rest: str | None = None) -> tuple[float, float, float]:
    """Seconds from spawn to the first ``tools/list`` answer, the RSS (MiB) a second later, and the
    seconds ``GET first_rest`` then takes (0 when not asked)."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [*args, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        with httpx.Client(timeout=5) as client:
            while True:
                if process.poll() is not None or time.perf_counter() - started > 60:
                    raise RuntimeError(f"{args} did not answer tools/list")
                try:
                    answer = client.post(f"http://127.0.0.1:{port}/mcp", json=LIST, headers=HEADERS)
                    if answer.status_code == 200 and answer.json()["result"]["tools"]:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.005)
        elapsed = time.perf_counter() - started
        time.sleep(1.0)
        rss = rss_mib(process.pid)
        rest = 0.0
        if first_rest is not None:
            rest_started = time.perf_counter()
            assert httpx.get(f"http://127.0.0.1:{port}{first_rest}", timeout=30).status_code == 200
            rest = time.perf_counter() - rest_started
        return elapsed, rss, rest
    finally:
        stop_group(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mcpserver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mcpserver:
        run_mcpserver(args.port)
        return
    contenders = {
        "aiod start": [os.path.join(BIN, "aiod"), "start"],
        "one-tool SDK MCPServer (baseline)": [sys.executable, os.path.abspath(__file__), "--mcpserver"],
    }
    first_rest = {"aiod start": "/v1/sandbox"}
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, command in contenders.items():
            results[name].append(start_once(command, first_rest.get(name)))
    print(f"start-up, {args.rounds} rounds alternating, {os.cpu_count()} CPUs\n")
    print(f"{'contender':<40} {'first tools/list s (median)':>28} {'idle RSS MiB (median)':>22}")
    medians = {}
    for name, samples in results.items():
        medians[name] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
        print(f"{name:<40} {medians[name][0]:>28.3f} {medians[name][1]:>22.1f}")
    (aiod_time, aiod_rss), (floor_time, floor_rss) = medians.values()
    for what, ratio in (("first tools/list", aiod_time / floor_time), ("idle RSS", aiod_rss / floor_rss)):
        print(f"target {what} <= 1.25x: {'met' if ratio <= 1.25 else 'MISSED'} ({ratio:.2f}x)")
    rest = statistics.median(sample[2] for sample in results["aiod start"])
    print(f"aiod's first REST call (GET /v1/sandbox, builds the REST door): {rest:.3f} s (median)")


if __name__ == "__main__":
    main()
