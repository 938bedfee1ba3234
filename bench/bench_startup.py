"""Start-up and idle memory of the gateway beside a one-tool SDK ``MCPServer``, in one run.

For each round, both servers are started in turn as fresh processes on free loopback ports (uvicorn
via ``agentbox_common.serving.serve`` for both), and timed from the spawn to the first ``tools/list``
answered over ``/mcp``; their RSS is read a second after that. Rounds alternate between the two so
both see the same machine load. Targets (issue 18): ``aiod start`` at most 1.25x the MCPServer's
time to its first ``tools/list``, and at most 1.25x its idle RSS. Beside the server process's RSS,
the PSS of its whole process tree (the gateway's interpreters are child processes). The REST door is
built on its first request, and each language's interpreter is started by its first code call, so
the gateway's first REST call (``GET /v1/sandbox``, after the memory is read) and its first
``sandbox_execute_code`` in Python and in JavaScript pay for them: those calls' times are printed too.
Smaller first-use costs, not timed here (a few ms each): the first browser call makes its httpx client
(importing httpcore and h11), the first GUI call on a display imports Xlib, the first skill call
YAML, the first preview yarl (and aiohttp), the first CDP relay the WebSocket client.

The project's own modules are compiled to bytecode first, as installing them (the image's
``pip install``) does and as the SDK's already are: an editable install under
``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every gateway module from source at each
start (about 0.09 s of the gateway's time on this machine, next to none of the floor's).

    .venv/bin/python bench/bench_startup.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import compileall
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
from bench._harness import BIN, parse_or_serve, rss_mib, tree_pss_mib
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


def first_code_call(port: int, language: str, code: str) -> float:
    """Seconds a first ``sandbox_execute_code`` takes (it starts the language's interpreter)."""
    body = {"name": "sandbox_execute_code", "arguments": {"language": language, "code": code}}
    started = time.perf_counter()
    answer = httpx.post(
        f"http://127.0.0.1:{port}/mcp",
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": body},
        headers=HEADERS,
        timeout=60,
    ).json()["result"]
    assert answer["content"][0]["text"] == "1\n", answer
    return time.perf_counter() - started


def start_once(args: list[str], first_calls: bool = False) -> tuple[float, float, float, float, float, float]:
    """Seconds from spawn to the first ``tools/list`` answer, the RSS and the tree's PSS (MiB) a
    second later, and (``first_calls``) the seconds the first REST call and the first Python and
    JavaScript code calls then take (0 when not asked)."""
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
        rss, pss = rss_mib(process.pid), tree_pss_mib(process.pid)
        rest = python = javascript = 0.0
        if first_calls:
            rest_started = time.perf_counter()
            assert httpx.get(f"http://127.0.0.1:{port}/v1/sandbox", timeout=30).status_code == 200
            rest = time.perf_counter() - rest_started
            python = first_code_call(port, "python", "print(1)")
            javascript = first_code_call(port, "javascript", "console.log(1)")
        return elapsed, rss, pss, rest, python, javascript
    finally:
        stop_group(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parse_or_serve(parser, run_mcpserver, "--mcpserver")
    if args is None:
        return
    root = Path(__file__).resolve().parent.parent
    for source in ("services", "bench", "tests/support"):  # the floor imports the last two
        compileall.compile_dir(root / source, quiet=1)
    contenders = {
        "aiod start": [os.path.join(BIN, "aiod"), "start"],
        "one-tool SDK MCPServer (baseline)": [sys.executable, os.path.abspath(__file__), "--mcpserver"],
    }
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, command in contenders.items():
            results[name].append(start_once(command, first_calls=name == "aiod start"))
    print(f"start-up, {args.rounds} rounds alternating, {os.cpu_count()} CPUs, medians\n")
    print(f"{'contender':<40} {'first tools/list s':>19} {'idle RSS MiB':>13} {'tree PSS MiB':>13}")
    medians = {}
    for name, samples in results.items():
        medians[name] = [statistics.median(sample[i] for sample in samples) for i in range(6)]
        print(f"{name:<40} {medians[name][0]:>19.3f} {medians[name][1]:>13.1f} {medians[name][2]:>13.1f}")
    aiod, floor = medians.values()
    for what, ratio in (("first tools/list", aiod[0] / floor[0]), ("idle RSS", aiod[1] / floor[1])):
        print(f"target {what} <= 1.25x: {'met' if ratio <= 1.25 else 'MISSED'} ({ratio:.2f}x)")
    print(f"aiod's first REST call (GET /v1/sandbox, builds the REST door): {aiod[3]:.3f} s")
    print(f"aiod's first sandbox_execute_code, python (starts its fork server): {aiod[4]:.3f} s")
    print(f"aiod's first sandbox_execute_code, javascript (starts a node): {aiod[5]:.3f} s")


if __name__ == "__main__":
    main()
