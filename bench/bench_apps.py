"""MCP Apps: what a host pays to open a view, and what the view grant costs each of its requests.

One gateway of this code (``aiod start``, with ``AIO_API_KEY``), calls interleaved:

- ``resources/read`` of ``ui://agentbox/live-view.html`` over ``/mcp`` (the view's HTML, built per
  request with its CSP), beside ``tools/list`` (the call every host makes anyway);
- ``sandbox_open_terminal`` over ``/mcp`` (a view grant and a page ticket made), beside the same
  ``tools/list``, the floor of a ``/mcp`` round trip;
- a view asset through its grant (``/apps/<token>/terminal/static/terminal.js``, another ``Origin``,
  as a host's frame fetches it) beside the same file with the key in a header (the dashboard's way).

    .venv/bin/python bench/bench_apps.py [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

import httpx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._harness import gateway, interleaved, percentile, print_latencies, tool_call_body

KEY = "bench-apps-key"
WARMUP = 30
AUTH = {"Authorization": f"Bearer {KEY}", "Accept": "application/json, text/event-stream"}
FOREIGN = {"Origin": "http://127.0.0.1:9"}


def rpc_body(method: str, params: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    with gateway({"AIO_API_KEY": KEY}) as url, httpx.Client(timeout=60) as client:
        mcp = f"{url}/mcp"

        def post(body: dict[str, object]) -> dict[str, object]:
            response = client.post(mcp, json=body, headers=AUTH)
            assert response.status_code == 200, response.text
            answer: dict[str, object] = response.json()
            assert "result" in answer, answer
            return answer

        opened = post(tool_call_body("sandbox_open_terminal", {}))["result"]
        assert isinstance(opened, dict)
        root = opened["_meta"]["agentbox/view"]["root"]
        asset = "/terminal/static/terminal.js"

        def fetch(path: str, headers: dict[str, str]) -> Callable[[], None]:
            def call() -> None:
                assert client.get(f"{url}{path}", headers=headers).status_code == 200

            return call

        calls: dict[str, Callable[[], None]] = {
            "resources/read live view": lambda: post(
                rpc_body("resources/read", {"uri": "ui://agentbox/live-view.html"})
            ),
            "tools/list (baseline)": lambda: post(rpc_body("tools/list", {})),
            "sandbox_open_terminal": lambda: post(tool_call_body("sandbox_open_terminal", {})),
            "view asset through its grant": fetch(f"{root}{asset}", FOREIGN),
            "same asset with the key (baseline)": fetch(asset, {"Authorization": f"Bearer {KEY}"}),
        }
        samples = interleaved(calls, args.calls, WARMUP)
    print(f"\nwith AIO_API_KEY, N={args.calls} each, interleaved\n")
    print_latencies(samples, width=40)
    pairs = (
        ("resources/read live view", "tools/list (baseline)"),
        ("sandbox_open_terminal", "tools/list (baseline)"),
        ("view asset through its grant", "same asset with the key (baseline)"),
    )
    print("\np50 ratios:")
    for ours, base in pairs:
        print(f"  {ours} / {base}: {percentile(samples[ours], 0.5) / percentile(samples[base], 0.5):.3f}")
    print(json.dumps({name: round(percentile(values, 0.5), 3) for name, values in samples.items()}))


if __name__ == "__main__":
    main()
