"""A warm ``print(1)`` through agentbox beside a Jupyter client's round trip to a started ipykernel,
measured side by side in one run.

Contenders, called in turn round after round so all see the same machine noise:

1. ``sandbox_execute_code`` ``print(1)`` through the gateway's ``/mcp`` (stateless: a fork of the
   warm Python fork server), a keep-alive httpx client;
2. ``POST /v1/code/execute`` ``print(1)``, stateless, the same client;
3. ``POST /v1/code/execute`` ``print(1)`` in a session (a persistent REPL, as a kernel is);
4. ``jupyter_client``'s ``BlockingKernelClient.execute("print(1)")`` on an ipykernel started by a
   ``KernelManager``: the request on the shell channel, the stream and the idle status on iopub,
   the ``execute_reply`` on shell (what a notebook front end waits for).

Target (issue 18): agentbox's warm ``print(1)`` at most 1.0x the kernel's round trip. The gateway is
``aiod start`` in its own process on a random loopback port; its Python worker is started by the
first code call, whose time is printed too. Every answer is checked.
Needs the ``bench`` extra (``pip install -e '.[bench]'``: ipykernel, jupyter_client).

    .venv/bin/python bench/bench_kernel.py [--calls 300]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, print_latencies, timed, tool_call_body

HEADERS = {"Accept": "application/json, text/event-stream"}
CODE = "print(1)"


def mcp_call(client: httpx.Client, url: str) -> Callable[[], None]:
    body = tool_call_body("sandbox_execute_code", {"language": "python", "code": CODE})

    def call() -> None:
        result = client.post(f"{url}/mcp", json=body, headers=HEADERS).json()["result"]
        assert not result["isError"] and result["content"][0]["text"] == "1\n", result

    return call


def rest_call(client: httpx.Client, url: str, session_id: str | None = None) -> Callable[[], None]:
    body: dict[str, Any] = {"language": "python", "code": CODE}
    if session_id is not None:
        body["session_id"] = session_id

    def call() -> None:
        data = client.post(f"{url}/v1/code/execute", json=body).json()["data"]
        assert data["stdout"] == "1\n", data

    return call


@contextlib.contextmanager
def kernel_client(env: Mapping[str, str] | None = None) -> Iterator[Any]:
    """An ipykernel started by a ``KernelManager`` (the interpreter running this script, with ``env``),
    and a blocking client whose channels are up and whose kernel has answered ``kernel_info``."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(**({"env": dict(env)} if env is not None else {}))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def kernel_call(client: Any) -> Callable[[], None]:
    def call() -> None:
        msg_id = client.execute(CODE)
        stdout = ""
        while True:
            message = client.get_iopub_msg(timeout=10)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream" and content["name"] == "stdout":
                stdout += content["text"]
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = client.get_shell_msg(timeout=10)
        while reply["parent_header"].get("msg_id") != msg_id:  # wait_for_ready's extra kernel_info replies
            reply = client.get_shell_msg(timeout=10)
        assert reply["content"]["status"] == "ok", reply
        assert stdout == "1\n", stdout

    return call


def calls(client: httpx.Client, url: str, kernel: Any) -> dict[str, Callable[[], None]]:
    return {
        "MCP sandbox_execute_code print(1), stateless": mcp_call(client, url),
        "REST /v1/code/execute print(1), stateless": rest_call(client, url),
        "REST /v1/code/execute print(1), session": rest_call(client, url, "bench"),  # made by its first call
        "jupyter_client execute print(1) -> ipykernel (baseline)": kernel_call(kernel),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per contender")
    args = parser.parse_args()

    with gateway() as url, httpx.Client(timeout=60) as client:
        first = timed(mcp_call(client, url))  # starts the fork server, before the kernel runs
        with kernel_client() as kernel:
            samples = interleaved(calls(client, url, kernel), args.calls, warmup=10)

    print(f"print(1) warm beside a Jupyter kernel, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs")
    print_latencies(samples, "contender", max(map(len, samples)), counts=True)
    floor = statistics.median(samples["jupyter_client execute print(1) -> ipykernel (baseline)"])
    print()
    for name in list(samples)[:3]:
        ratio = statistics.median(samples[name]) / floor
        print(f"{name} / kernel p50 = {ratio:.2f}x (target <= 1.0x: {'met' if ratio <= 1.0 else 'MISSED'})")
    print(f"first stateless print(1) after start-up (starts the Python worker): {first * 1000:.1f} ms")


if __name__ == "__main__":
    main()
