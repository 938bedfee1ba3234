"""Warm interpreters against cold starts, measured side by side in one run.

1. ``sandbox_execute_code`` with ``print(1)`` through a gateway's ``/mcp`` (warm: a fork of a
   pre-started Python) beside ``python3 -c 'print(1)'`` spawned cold, with the same interpreter the
   gateway runs (target: MCP p50 at most a quarter of the cold spawn's).
2. ``POST /v1/code/execute`` beside its MCP equivalent, calls alternating so both see the same noise.
3. The same for JavaScript: the MCP tool (a pre-started ``node``) beside ``node -e`` spawned cold.

The gateway is ``aiod start`` in its own process on a random loopback port; the client is a
keep-alive httpx client. Every call is checked for the right answer.

    .venv/bin/python bench/bench_code.py [--calls 300] [--spawns 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, print_latencies

HEADERS = {"Accept": "application/json, text/event-stream"}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="warm calls per path")
    parser.add_argument("--spawns", type=int, default=100, help="cold spawns per interpreter")
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


if __name__ == "__main__":
    main()
