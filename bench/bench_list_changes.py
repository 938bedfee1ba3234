"""Lists that say when they change (issue 32): from an upstream's start (its port accepting) and its
death (SIGKILL) to each client hearing of it, in the same rounds:

1. a 2026-07-28 client on ``subscriptions/listen`` (``notifications/tools/list_changed``);
2. a handshake-era client on the GET stream (the TypeScript SDK's way);
3. the baseline: a client without notifications polling ``tools/list`` every second (what it had to
   do before), seeing the change on the first listing that differs.

The gateway is ``aiod start`` in its own process with one upstream registered (started and killed
each round, in a process of its own); every notification is checked.

    .venv/bin/python bench/bench_list_changes.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, print_latencies
from tests.gateway.upstreams.test_aggregation_fakes import UPSTREAM_MAIN
from tests.support.jsonrpc import MODERN_META, modern_headers
from tests.support.servers import free_port

POLL_INTERVAL = 1.0
LISTEN = "subscriptions/listen (2026-07-28)"
GET_STREAM = "GET stream (handshake era)"
POLLING = "tools/list every 1 s (baseline)"


def sse_data(response: httpx.Response) -> Iterator[dict[str, object]]:
    for line in response.iter_lines():
        if line.startswith("data:"):
            yield json.loads(line.removeprefix("data:"))


def listen_stream(url: str, heard: Callable[[], None], ready: threading.Event) -> None:
    params = {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params}
    headers = {"Accept": "application/json, text/event-stream", **modern_headers("", "subscriptions/listen")}
    with httpx.stream("POST", f"{url}/mcp", json=body, headers=headers, timeout=None) as response:
        for message in sse_data(response):
            if message.get("method") == "notifications/subscriptions/acknowledged":
                ready.set()
            elif message.get("method") == "notifications/tools/list_changed":
                heard()


def get_stream(url: str, heard: Callable[[], None], ready: threading.Event) -> None:
    headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    with httpx.stream("GET", f"{url}/mcp", headers=headers, timeout=None) as response:
        assert response.status_code == 200
        ready.set()
        for message in sse_data(response):
            assert message == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, message
            heard()


def polling(url: str, heard: Callable[[], None], ready: threading.Event) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    names: set[str] | None = None
    with httpx.Client(timeout=30) as client:
        while True:
            listed = {tool["name"] for tool in client.post(f"{url}/mcp", json=body).json()["result"]["tools"]}
            if names is not None and listed != names:
                heard()
            names = listed
            ready.set()
            time.sleep(POLL_INTERVAL)


def quietly(observe: Callable[..., None], *args: object) -> None:
    """Run an observer until the gateway goes away at the end of the run."""
    with contextlib.suppress(httpx.HTTPError):
        observe(*args)


@contextlib.contextmanager
def upstream(port: int) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """The upstream in its own process, and the moment its port first accepted a connection."""
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen([sys.executable, "-c", UPSTREAM_MAIN, str(port), "later", "ping"], cwd=root)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert process.poll() is None and time.monotonic() < deadline, "the upstream did not start"
            time.sleep(0.002)
        yield process, time.perf_counter()
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    port = free_port()
    servers = {"later": {"url": f"http://127.0.0.1:{port}/mcp", "prefix": "later"}}
    env = {"AGENTBOX_BROWSER_PROXY_PORT": "0", "EXTRA_MCP_SERVERS": json.dumps(servers)}
    with gateway(env) as url:
        arrivals: dict[str, queue.Queue[float]] = {name: queue.Queue() for name in (LISTEN, GET_STREAM, POLLING)}
        for name, observe in ((LISTEN, listen_stream), (GET_STREAM, get_stream), (POLLING, polling)):
            ready = threading.Event()
            heard = (lambda q: lambda: q.put(time.perf_counter()))(arrivals[name])
            threading.Thread(target=quietly, args=(observe, url, heard, ready), daemon=True).start()
            assert ready.wait(30), name
        started: dict[str, list[float]] = {name: [] for name in arrivals}
        killed: dict[str, list[float]] = {name: [] for name in arrivals}
        pause = random.Random(7)
        for _ in range(args.rounds):
            with upstream(port) as (process, accepting):
                for name, arrived in arrivals.items():
                    started[name].append(arrived.get(timeout=30) - accepting)
                time.sleep(pause.uniform(0, POLL_INTERVAL))  # not in step with the gateway's listings
                process.kill()
                process.wait()
                died = time.perf_counter()
                for name, arrived in arrivals.items():
                    killed[name].append(arrived.get(timeout=30) - died)
            time.sleep(0.5)
        for name, arrived in arrivals.items():
            assert arrived.empty(), f"{name}: more than one notification a change"
        print(f"N={args.rounds} rounds, the three clients side by side, {os.cpu_count()} CPUs\n")
        print_latencies({f"start -> {name}": values for name, values in started.items()}, width=48)
        print()
        print_latencies({f"kill -> {name}": values for name, values in killed.items()}, width=48)


if __name__ == "__main__":
    main()
