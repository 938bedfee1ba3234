"""What redacting by decoded names and escaping control characters costs on the access-log hot
path (issue 26 items 8 and 9), beside the code of another git ref (default ``main``).

Four gateways run side by side, all with the access log on and a key set, writing to a file as
under supervisord: this tree and the base ref, each in the text and the JSON log format (the base
ref's ``services/`` is extracted with ``git archive`` and put first on ``PYTHONPATH``, ahead of the
editable install). Each round calls every gateway once with the cheapest logged request (public
``/health``) plain, with a query holding the key and another parameter, and with a path holding
CR LF, so all see the same machine noise; the ratio of the p50s (this tree / base) is the figure.

Over HTTP the line's cost is lost in the noise of a shared machine, so first the same requests are
made in-process: the middleware around a bare ASGI app, its records written by the services'
handler (``configure_logging``) to a file, short processes of this tree and the base ref alternating;
the median microseconds per request of each is printed.

    .venv/bin/python bench/bench_access_log.py [--calls 3000] [--base main]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, percentile, print_latencies

ROOT = Path(__file__).resolve().parent.parent
KEY = "bench-access-log-key-0123456789"
TARGETS = {"plain": "/health", "key in query": f"/health?api_key={KEY}&page=2", "CR LF in path": "/health%0d%0ax"}


@contextlib.contextmanager
def base_tree(ref: str) -> Iterator[str]:
    """``PYTHONPATH`` putting ``ref``'s service packages first."""
    with tempfile.TemporaryDirectory(prefix="bench-access-log-") as directory:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "services"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", directory], input=archive.stdout, check=True)
        services = Path(directory, "services")
        yield os.pathsep.join(str(services / name) for name in ("common", "gateway", "browser", "mcp-mode"))


#: Run by ``python -c`` under each tree: microseconds per request through the middleware, per target.
MICRO = """
import asyncio, json, logging, os, sys, time
from agentbox_common.logging import configure_logging
from agentbox_common.observability.middleware import ObservabilityMiddleware
sys.stderr = open(os.devnull, "w")
configure_logging()

async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})

async def receive():
    return {"type": "http.request", "body": b""}

async def send(message):
    pass

wrapped = ObservabilityMiddleware(app, None)
out = {}
for name, (path, query) in json.loads(sys.argv[1]).items():
    scope = {"type": "http", "method": "GET", "path": path, "query_string": query.encode(), "headers": [],
             "client": ("127.0.0.1", 5000), "root_path": ""}
    async def run(count):
        for _ in range(count):
            await wrapped(scope, receive, send)
    asyncio.run(run(300))
    started = time.perf_counter()
    asyncio.run(run(int(sys.argv[2])))
    out[name] = (time.perf_counter() - started) / int(sys.argv[2]) * 1e6
print(json.dumps(out))
"""


def micro(base_path: str, base: str, calls: int, runs: int = 7) -> None:
    targets = {name: (unquote(t.split("?")[0]), t.partition("?")[2]) for name, t in TARGETS.items()}
    found: dict[str, list[float]] = {}
    for _ in range(runs):
        for tree, extra in (("this tree", {}), (base, {"PYTHONPATH": base_path})):
            for form in ("text", "json"):
                env = {**os.environ, **extra, "LOG_FORMAT": "json" if form == "json" else "", "LOG_LEVEL": "INFO"}
                command = [sys.executable, "-c", MICRO, json.dumps(targets), str(calls)]
                timings = json.loads(subprocess.run(command, env=env, check=True, capture_output=True).stdout)
                for name, value in timings.items():
                    found.setdefault(f"{name}, {tree}, {form}", []).append(value)
    print(f"{'in-process, per request':<34} {'median us':>10}")
    for name, values in found.items():
        print(f"{name:<34} {statistics.median(values):>10.1f}")
    for name in TARGETS:
        for form in ("text", "json"):
            ours = statistics.median(found[f"{name}, this tree, {form}"])
            theirs = statistics.median(found[f"{name}, {base}, {form}"])
            print(f"in-process ratio {name}, {form}: this tree / {base} = {ours / theirs:.3f}x")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--base", default="main")
    parser.add_argument("--micro-calls", type=int, default=5000)
    args = parser.parse_args()
    common = {"AIO_API_KEY": KEY, "AGENTBOX_ACCESS_LOG": "true", "LOG_LEVEL": "INFO"}
    with contextlib.ExitStack() as stack:
        base_path = stack.enter_context(base_tree(args.base))
        micro(base_path, args.base, args.micro_calls)
        urls: dict[str, str] = {}
        for form in ("text", "json"):
            env = {**common, "LOG_FORMAT": "json" if form == "json" else ""}
            urls[f"this tree, {form}"] = stack.enter_context(gateway(env))
            urls[f"{args.base}, {form}"] = stack.enter_context(gateway({**env, "PYTHONPATH": base_path}))
        client = stack.enter_context(httpx.Client())

        def call(url: str) -> Callable[[], object]:
            def once() -> None:
                assert client.get(url).status_code in (200, 401)  # the CR LF path is not public

            return once

        samples = interleaved(
            {
                f"{target_name}, {name}": call(url + target)
                for target_name, target in TARGETS.items()
                for name, url in urls.items()
            },
            rounds=args.calls,
            warmup=100,
        )
    print_latencies(samples, width=34)
    for target_name in TARGETS:
        for form in ("text", "json"):
            ours = percentile(samples[f"{target_name}, this tree, {form}"], 0.5)
            base = percentile(samples[f"{target_name}, {args.base}, {form}"], 0.5)
            print(f"p50 ratio {target_name}, {form}: this tree / {args.base} = {ours / base:.3f}x")


if __name__ == "__main__":
    main()
