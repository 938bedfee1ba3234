"""Warm interpreters against cold starts, measured side by side in one run.

1. ``sandbox_execute_code`` with ``print(1)`` through a gateway's ``/mcp`` (warm: a fork of a
   pre-started Python) beside ``python3 -c 'print(1)'`` spawned cold, with the same interpreter the
   gateway runs (target: MCP p50 at most a quarter of the cold spawn's).
2. ``POST /v1/code/execute`` beside its MCP equivalent, calls alternating so both see the same noise.
3. The same for JavaScript: the MCP tool (a pre-started ``node``) beside ``node -e`` spawned cold.
4. Rich outputs beside a bare Jupyter round trip (``--kernel``, on by default where jupyter_client and
   ipykernel are installed): ``print(1)`` and a matplotlib figure rendered to ``image/png`` through
   ``POST /v2/code/execute``, stateless (the fork server with IPython's display model) and in a session
   (a prewarmed ipykernel the gateway drives), beside ``jupyter_client``'s execute → IOPub idle →
   ``execute_reply`` on an ipykernel of the same interpreter started by a ``KernelManager``
   (target, issue 33: our ``print(1)`` at most 1.0x the bare round trip). The gateway then runs this
   script's interpreter as the sandbox's ``python3``, so both sides have the same packages. The code
   plane's own kernel round trip, called in this process without HTTP, is measured beside them too.

The gateway is ``aiod start`` in its own process on a random loopback port; the client is a
keep-alive httpx client. Every call is checked for the right answer.

    .venv/bin/python bench/bench_code.py [--calls 300] [--spawns 100] [--kernel-calls 200] [--no-kernel]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import bench_kernel
from bench._harness import gateway, interleaved, print_latencies

HEADERS = {"Accept": "application/json, text/event-stream"}
FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
PNG = b"\x89PNG\r\n\x1a\n"


def mcp_call(client: httpx.Client, url: str, language: str, code: str, expected: str) -> Callable[[], None]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_code", "arguments": {"language": language, "code": code}},
    }

    def call() -> None:
        result = client.post(f"{url}/mcp", json=body, headers=HEADERS).json()["result"]
        assert not result["isError"] and result["content"][0]["text"] == expected, result

    return call


def rest_call(client: httpx.Client, url: str, code: str, expected: str) -> Callable[[], None]:
    def call() -> None:
        data = client.post(f"{url}/v1/code/execute", json={"language": "python", "code": code}).json()["data"]
        assert data["stdout"] == expected, data

    return call


def spawn_call(argv: list[str], expected: str) -> Callable[[], None]:
    def call() -> None:
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        assert out == expected, out

    return call


def v2_call(client: httpx.Client, url: str, code: str, session_id: str | None) -> Callable[[], None]:
    body = {"language": "python", "code": code, "session_id": session_id}
    check = _png_shown if code == FIGURE else _printed_one

    def call() -> None:
        data = client.post(f"{url}/v2/code/execute", json=body).json()["data"]
        check(data["outputs"])

    return call


def _printed_one(outputs: list[dict[str, Any]]) -> None:
    assert outputs == [{"output_type": "stream", "name": "stdout", "text": "1\n"}], outputs


def _png_shown(outputs: list[dict[str, Any]]) -> None:
    [shown] = [o for o in outputs if o["output_type"] == "display_data"]
    assert base64.b64decode(shown["data"]["image/png"]).startswith(PNG), outputs


@contextlib.contextmanager
def kernel_client() -> Iterator[Any]:
    """bench_kernel's ipykernel and client, with matplotlib's inline backend as the gateway's kernels have it."""
    with bench_kernel.kernel_client(
        {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    ) as client:
        yield client


def kernel_call(client: Any, code: str) -> Callable[[], None]:
    """execute → the outputs and IOPub's idle → the ``execute_reply`` (what a notebook waits for)."""
    check = _png_shown if code == FIGURE else _printed_one

    def call() -> None:
        msg_id = client.execute(code)
        outputs: list[dict[str, Any]] = []
        while True:
            message = client.get_iopub_msg(timeout=30)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream" and outputs and outputs[-1].get("name") == content["name"]:
                outputs[-1]["text"] += content["text"]  # one stream split over messages, as a notebook merges it
            elif kind == "stream":
                outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
            elif kind == "display_data":
                outputs.append({"output_type": kind, "data": content["data"]})
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = client.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:  # wait_for_ready's extra kernel_info replies
            reply = client.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "ok", reply
        check(outputs)

    return call


@contextlib.contextmanager
def plane_session(env: dict[str, str]) -> Iterator[Callable[[], None]]:
    """The code plane in this process (its own event loop in a thread), a session's ``print(1)``:
    the kernel driver's round trip without the HTTP door."""
    from agentbox_gateway.planes.code import CodePlane
    from agentbox_gateway.settings import GatewaySettings

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    plane = CodePlane(GatewaySettings.from_env({}), env=env)

    def call() -> None:
        run = asyncio.run_coroutine_threadsafe(plane.execute("python", "print(1)", session_id="bench"), loop)
        _printed_one(run.result(60).outputs())

    try:
        yield call
    finally:
        asyncio.run_coroutine_threadsafe(plane.aclose(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def kernel_rows(calls: int) -> dict[str, list[float]]:
    """Section 4: ``/v2/code`` beside a bare jupyter_client round trip, interleaved."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    with (
        gateway(env) as url,
        httpx.Client(timeout=120) as client,
        kernel_client() as kernel,
        plane_session(env) as in_process,
    ):
        contenders = {
            "/v2/code print(1), stateless": v2_call(client, url, "print(1)", None),
            "/v2/code print(1), session (ipykernel)": v2_call(client, url, "print(1)", "bench"),
            "jupyter_client print(1) -> ipykernel (baseline)": kernel_call(kernel, "print(1)"),
            "code plane print(1), session, in-process (no HTTP)": in_process,
            "/v2/code figure -> image/png, stateless": v2_call(client, url, FIGURE, None),
            "/v2/code figure -> image/png, session (ipykernel)": v2_call(client, url, FIGURE, "bench"),
            "jupyter_client figure -> image/png (baseline)": kernel_call(kernel, FIGURE),
        }
        return interleaved(contenders, calls, warmup=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="warm calls per path")
    parser.add_argument("--spawns", type=int, default=100, help="cold spawns per interpreter")
    parser.add_argument("--kernel-calls", type=int, default=200, help="calls per contender of section 4")
    parser.add_argument("--no-kernel", action="store_true", help="skip section 4 (rich outputs beside a kernel)")
    args = parser.parse_args()

    rows: dict[str, list[float]] = {}
    with gateway() as url, httpx.Client(timeout=60) as client:
        info = {i["language"]: i for i in client.get(f"{url}/v1/code/info").json()["data"]["languages"]}
        python = info["python"]["details"]["executable"]
        mcp_py = mcp_call(client, url, "python", "print(1)", "1\n")
        rest_py = rest_call(client, url, "print(1)", "1\n")
        warm = interleaved({"mcp": mcp_py, "rest": rest_py}, args.calls, warmup=5)
        cold = interleaved({"cold": spawn_call([python, "-c", "print(1)"], "1\n")}, args.spawns, warmup=5)
        rows["MCP sandbox_execute_code print(1), python (warm)"] = warm["mcp"]
        rows[f"{python} -c 'print(1)' (cold spawn)"] = cold["cold"]
        rows["REST /v1/code/execute print(1) (warm)"] = warm["rest"]
        node = shutil.which("node")
        if "javascript" in info and node:
            js_calls = {
                "mcp": mcp_call(client, url, "javascript", "console.log(1)", "1\n"),
                "cold": spawn_call([node, "-e", "console.log(1)"], "1\n"),
            }
            js = interleaved(js_calls, args.spawns, warmup=5)
            rows["MCP sandbox_execute_code console.log(1), javascript"] = js["mcp"]
            rows["node -e 'console.log(1)' (cold spawn)"] = js["cold"]

    print(f"code plane benchmark, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print_latencies(rows, "case", max(map(len, rows)), counts=True)
    ratio = statistics.median(warm["mcp"]) / statistics.median(cold["cold"])
    verdict = "met" if ratio <= 0.25 else "MISSED"
    print(f"\nMCP warm p50 / cold python3 p50 = {ratio:.2f} (target <= 0.25: {verdict})")
    if args.no_kernel:
        return
    kernel = kernel_rows(args.kernel_calls)
    print("\nrich outputs beside a bare jupyter_client round trip on an ipykernel of the same interpreter")
    print_latencies(kernel, "case", max(map(len, kernel)), counts=True)
    names = list(kernel)
    for baseline, ours in ((names[2], [*names[:2], names[3]]), (names[6], names[4:6])):
        floor = statistics.median(kernel[baseline])
        for name in ours:
            ratio = statistics.median(kernel[name]) / floor
            target = " (target <= 1.0x: " + ("met)" if ratio <= 1.0 else "MISSED)") if "print" in name else ""
            print(f"{name} / {baseline} p50 = {ratio:.2f}x{target}")


if __name__ == "__main__":
    main()
