"""What redacting by decoded names and escaping control characters costs on the access-log hot
path (issue 26 items 8 and 9), beside the code of another git ref (default ``main``).

Four gateways run side by side, all with the access log on and a key set, writing to a file as
under supervisord: this tree and the base ref, each in the text and the JSON log format (the base
ref's ``services/`` is extracted with ``git archive`` and put first on ``PYTHONPATH``, ahead of the
editable install). Each round calls every gateway once with the cheapest logged request (public
``/health``) plain, with a query holding the key and another parameter, and with a path holding
CR LF, so all see the same machine noise; the ratio of the p50s (this tree / base) is the figure.

Over HTTP the line's cost is lost in the noise of a shared machine, so first the same requests are
made in-process: each tree's middleware around a bare ASGI app, its records written through that
tree's formatter and filter (as ``configure_logging`` sets them) to ``/dev/null``, the base ref
loaded beside this tree as ``agentbox_common_base``, calls alternating one by one.

    .venv/bin/python bench/bench_access_log.py [--calls 3000] [--base main]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import importlib.util
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
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


def _load_base(directory: str) -> tuple[ModuleType, ModuleType]:
    """The base ref's ``agentbox_common`` as the package ``agentbox_common_base`` (its logging and
    access log use relative imports only), beside this tree's in the same process."""
    spec = importlib.util.spec_from_file_location(
        "agentbox_common_base", Path(directory, "agentbox_common", "__init__.py"), submodule_search_locations=[]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(Path(directory, "agentbox_common"))]
    sys.modules["agentbox_common_base"] = package
    spec.loader.exec_module(package)
    return (
        importlib.import_module("agentbox_common_base.logging"),
        importlib.import_module("agentbox_common_base.observability.middleware"),
    )


def _wrapped(logging_module: ModuleType, middleware_module: ModuleType, form: str, name: str) -> Any:
    """The tree's middleware around a bare app, logging to its own logger through the tree's
    formatter and filter (as ``configure_logging`` sets them), into ``/dev/null``."""
    handler = logging.StreamHandler(open(os.devnull, "w"))
    formatter = (
        logging_module.JsonFormatter()
        if form == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler.setFormatter(formatter)
    handler.addFilter(logging_module.RedactSecrets())
    logger = logging.getLogger(f"bench.{name}")
    logger.handlers[:], logger.propagate = [handler], False
    logger.setLevel(logging.INFO)
    middleware = middleware_module.ObservabilityMiddleware(_bare_app, None)
    return middleware, logger


async def _bare_app(scope: dict, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _receive() -> dict:
    return {"type": "http.request", "body": b""}


async def _send(message: dict) -> None:
    pass


def micro(base_common: str, base: str, calls: int) -> None:
    """Per request through each tree's middleware in one process, alternating call by call."""
    import agentbox_common.logging as ours_logging
    import agentbox_common.observability.middleware as ours_middleware

    logging._srcfile = None  # as configure_logging sets it, for both
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    base_logging, base_middleware = _load_base(base_common)
    contenders: dict[str, tuple[Any, Any, logging.Logger]] = {}
    for form in ("text", "json"):
        for tree, modules in (("this tree", (ours_logging, ours_middleware)), (base, (base_logging, base_middleware))):
            middleware, logger = _wrapped(*modules, form, f"{tree}.{form}")
            contenders[f"{tree}, {form}"] = (modules[1], middleware, logger)
    found: dict[str, list[float]] = {}

    async def run() -> None:
        for target_name, target in TARGETS.items():
            path, _, query = target.partition("?")
            scope = {
                "type": "http",
                "method": "GET",
                "path": unquote(path),
                "query_string": query.encode(),
                "headers": [],
                "client": ("127.0.0.1", 5000),
                "root_path": "",
            }
            for round_ in range(calls + 200):
                for name, (module, middleware, logger) in contenders.items():
                    module.access_logger = logger
                    started = time.perf_counter_ns()
                    await middleware(dict(scope), _receive, _send)
                    elapsed = time.perf_counter_ns() - started
                    if round_ >= 200:
                        found.setdefault(f"{target_name}, {name}", []).append(elapsed / 1000)

    asyncio.run(run())
    print(f"{'in-process, per request':<34} {'p50 us':>8} {'p99 us':>8}")
    for name, values in found.items():
        ordered = sorted(values)
        print(f"{name:<34} {ordered[len(ordered) // 2]:>8.1f} {ordered[int(len(ordered) * 0.99)]:>8.1f}")
    for target_name in TARGETS:
        for form in ("text", "json"):
            ours = statistics.median(found[f"{target_name}, this tree, {form}"])
            theirs = statistics.median(found[f"{target_name}, {base}, {form}"])
            print(f"in-process p50 ratio {target_name}, {form}: this tree / {base} = {ours / theirs:.3f}x")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--base", default="main")
    parser.add_argument("--micro-calls", type=int, default=20000)
    parser.add_argument("--micro-only", action="store_true", help="skip the HTTP part")
    args = parser.parse_args()
    common = {"AIO_API_KEY": KEY, "AGENTBOX_ACCESS_LOG": "true", "LOG_LEVEL": "INFO"}
    with contextlib.ExitStack() as stack:
        base_path = stack.enter_context(base_tree(args.base))
        micro(base_path.split(os.pathsep)[0], args.base, args.micro_calls)
        if args.micro_only:
            return
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
