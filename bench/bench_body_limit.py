"""What the JSON body cap (``AIO_MAX_JSON_BODY_BYTES``, issue 26) costs ``POST /v1/file/write``: the
check of ``Content-Length`` and the count of every chunk as a route reads it.

This code's gateway beside main's (``aiod start`` from a ``git archive main`` copy given with
``--main``; without it a second process of this code, the noise floor), calls interleaved, three body
sizes: 100 bytes of text, 64 KiB of text, 1 MiB of base64.

    git archive main | tar -x -C /tmp/agentbox-main
    .venv/bin/python bench/bench_body_limit.py --main /tmp/agentbox-main [--calls 300]
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
from collections.abc import Callable

import httpx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._harness import gateway, interleaved, percentile, print_latencies, tree_gateway

WARMUP = 20
BODIES = {
    "write 100 B": {"content": "x" * 100},
    "write 64 KiB": {"content": "x" * 65536},
    "write 1 MiB base64": {"content": base64.b64encode(os.urandom(1024 * 1024)).decode(), "encoding": "base64"},
}


def writes(client: httpx.Client, url: str, folder: str) -> dict[str, Callable[[], None]]:
    def write(name: str, body: dict[str, str]) -> Callable[[], None]:
        request = {"file": os.path.join(folder, name.replace(" ", "-")), **body}

        def call() -> None:
            response = client.post(f"{url}/v1/file/write", json=request)
            assert response.status_code == 200 and response.json()["success"], response.text

        return call

    return {name: write(name, body) for name, body in BODIES.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--main", default=None, metavar="DIR", help="a `git archive main` copy")
    args = parser.parse_args()
    baseline = "main" if args.main else "2nd process"
    with (
        tempfile.TemporaryDirectory() as folder,
        gateway() as ours,
        tree_gateway(args.main) as theirs,
        httpx.Client(timeout=60) as client,
    ):
        calls: dict[str, Callable[[], None]] = {}
        for name, call in writes(client, ours, os.path.join(folder, "ours-")).items():
            calls[f"{name} (this code)"] = call
        for name, call in writes(client, theirs, os.path.join(folder, "theirs-")).items():
            calls[f"{name} ({baseline})"] = call
        samples = interleaved(calls, args.calls, WARMUP)
    print(f"\nPOST /v1/file/write, N={args.calls} each, interleaved\n")
    print_latencies(samples, width=44)
    print(f"\np50 ratio this code / {baseline} (target <= 1.05):")
    for name in BODIES:
        ratio = percentile(samples[f"{name} (this code)"], 0.5) / percentile(samples[f"{name} ({baseline})"], 0.5)
        print(f"  {name}: {ratio:.3f}")


if __name__ == "__main__":
    main()
