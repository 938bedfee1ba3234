"""What the guards cost every request: the Host, Origin and key checks and the page headers (issue 26).

Three small requests, each on this code's gateway beside main's gateway (``aiod start`` from a ``git
archive main`` copy given with ``--main``; without it a second process of this code, the noise
floor), calls interleaved, with and without ``AIO_API_KEY``:

- ``GET /v1/ping`` (public: the guards and the page headers, the smallest route);
- ``POST /v1/shell/exec`` ``echo hi`` with the gateway's own ``Origin`` (a dashboard's request);
- ``tools/call`` ``sandbox_execute_bash`` ``echo hi`` over ``/mcp`` (the agent's hot path).

    git archive main | tar -x -C /tmp/agentbox-main
    .venv/bin/python bench/bench_guards.py --main /tmp/agentbox-main [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import httpx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._harness import gateway, interleaved, percentile, print_latencies, tool_call_body, tree_gateway

KEY = "bench-guards-key"
WARMUP = 30
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def requests(client: httpx.Client, url: str, key: str | None) -> dict[str, Callable[[], None]]:
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    own = {**auth, "Origin": url}
    body = tool_call_body("sandbox_execute_bash", {"cmd": "echo hi"})

    def ping() -> None:
        assert client.get(f"{url}/v1/ping", headers=auth).status_code == 200

    def shell_exec() -> None:
        response = client.post(f"{url}/v1/shell/exec", json={"command": "echo hi"}, headers=own)
        assert response.status_code == 200, response.text

    def mcp() -> None:
        assert client.post(f"{url}/mcp", json=body, headers={**MCP_HEADERS, **auth}).status_code == 200

    return {"GET /v1/ping": ping, "POST /v1/shell/exec, own Origin": shell_exec, "/mcp echo hi": mcp}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--main", default=None, metavar="DIR", help="a `git archive main` copy")
    args = parser.parse_args()
    baseline = "main" if args.main else "2nd process"
    ratios: list[str] = []
    for key in (None, KEY):
        env = {"AIO_API_KEY": key} if key else {"AIO_API_KEY": ""}
        with gateway(env) as ours, tree_gateway(args.main, env) as theirs, httpx.Client(timeout=60) as client:
            calls: dict[str, Callable[[], None]] = {}
            for name, call in requests(client, ours, key).items():
                calls[f"{name} (this code)"] = call
            for name, call in requests(client, theirs, key).items():
                calls[f"{name} ({baseline})"] = call
            samples = interleaved(calls, args.calls, WARMUP)
        print(f"\n{'with' if key else 'without'} AIO_API_KEY, N={args.calls} each, interleaved\n")
        print_latencies(samples, width=52)
        for name in requests(httpx.Client(), "", key):
            ratio = percentile(samples[f"{name} (this code)"], 0.5) / percentile(samples[f"{name} ({baseline})"], 0.5)
            ratios.append(f"{name}, {'keyed' if key else 'key-less'}: {ratio:.3f}")
    print(f"\np50 ratio this code / {baseline} (target <= 1.05):")
    print("\n".join(f"  {line}" for line in ratios))


if __name__ == "__main__":
    main()
