"""What every benchmark needs: servers started as real processes on free loopback ports, calls
timed side by side, and latency percentiles printed in one table shape.

The benchmarks run as ``python bench/bench_x.py``; each puts the repository root on ``sys.path``
before importing this module (``from bench._harness import ...``)."""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx

from tests.support.servers import free_port, stop_group

BIN = os.path.dirname(sys.executable)


@contextlib.contextmanager
def process_group(
    args: list[str], ready_url: str, env: Mapping[str, str] | None = None, timeout: float = 30
) -> Iterator[subprocess.Popen]:
    """Run ``args`` in its own process group until the block ends, once ``ready_url`` answers 200.
    Output goes to a file, not a pipe: a full pipe would stall the server's logging mid-benchmark."""
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        args, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                output = log.read().decode(errors="replace")[-500:]
                raise RuntimeError(f"{args[0]} did not become ready: {output}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(ready_url, timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield process
    finally:
        stop_group(process)
        log.close()


@contextlib.contextmanager
def listening(
    args: list[str], ready_path: str = "/health", env: Mapping[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """A server taking ``--port``, started on a free one; yields its base URL and its process."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with process_group([*args, "--port", str(port)], url + ready_path, env) as process:
        yield url, process


@contextlib.contextmanager
def gateway(env: Mapping[str, str] | None = None) -> Iterator[str]:
    """``aiod start`` in its own process on a free loopback port; yields its base URL."""
    with listening([os.path.join(BIN, "aiod"), "start"], "/health", env) as (url, _):
        yield url


@contextlib.contextmanager
def tree_gateway(tree: str | None, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The gateway of another copy of the code (a ``git archive main`` tree: its packages first on
    ``PYTHONPATH``, same venv), or a second process of this code when ``tree`` is None."""
    if tree is None:
        with gateway(env) as url:
            yield url
        return
    root = Path(tree).resolve()
    path = os.pathsep.join(str(root / part) for part in ("services/gateway", "services/common", ""))
    args = [os.path.join(BIN, "python"), "-m", "agentbox_gateway.cli", "start"]
    with listening(args, "/health", {**(env or {}), "PYTHONPATH": path}) as (url, _):
        yield url


def tool_call_body(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC ``tools/call`` request for ``/mcp``."""
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def timed(call: Callable[[], object]) -> float:
    """Seconds one call takes."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def interleaved(calls: Mapping[str, Callable[[], object]], rounds: int, warmup: int) -> dict[str, list[float]]:
    """Time every call ``rounds`` times, one of each per round so all see the same machine noise,
    after ``warmup`` untimed rounds."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(timed(call))
    return samples


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of samples in seconds, in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(round(q * (len(ordered) - 1)), len(ordered) - 1)] * 1000


def print_latencies(
    samples: Mapping[str, list[float]], label: str = "contender", width: int = 40, counts: bool = False
) -> None:
    """One line per contender: p50 and p99 in milliseconds (and the number of samples)."""
    print(f"{label:<{width}} {'p50 ms':>8} {'p99 ms':>8}" + ("  samples" if counts else ""))
    for name, values in samples.items():
        line = f"{name:<{width}} {percentile(values, 0.5):>8.2f} {percentile(values, 0.99):>8.2f}"
        print(line + (f"  {len(values)}" if counts else ""))


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` (MiB), as ``/proc`` reports it."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def tree_pss_mib(pid: int) -> float:
    """Proportional set size of ``pid`` and all its descendants (shared pages counted once)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    tree, grown = {pid}, True
    while grown:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    total = 0
    for member in tree:
        try:
            rollup = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
    return total / 1024


def parse_or_serve(
    parser: argparse.ArgumentParser, serve: Callable[[int], None], flag: str = "--baseline-server"
) -> argparse.Namespace | None:
    """The bench's arguments; None when it was started as its own helper server (``flag --port N``,
    hidden from ``--help``), which has then served until it was stopped."""
    parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if getattr(args, flag.removeprefix("--").replace("-", "_")):
        serve(args.port)
        return None
    return args
