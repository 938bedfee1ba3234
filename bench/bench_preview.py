"""The preview proxy (``/proxy/{port}/``) beside the app reached directly, in one run.

1. A small GET (the app's JSON echo, about 400 bytes) through ``/proxy/{port}/`` and directly, one
   keep-alive httpx client each, calls interleaved: p50/p99 and the added p50 (target ≤ 1 ms).
2. A 100 MiB download through the proxy and directly, both as a file is served (``Content-Length``)
   and as a chunked stream, rounds interleaved, read with aiohttp's C parser so that the client is
   not the bottleneck: median MiB/s of each and the ratios (target ≥ 0.5x direct), and the
   gateway's RSS before and after all downloads (and its peak, ``VmHWM``) from
   ``/proc/<pid>/status`` (target: growth ≤ 20 MiB).

The app is tests/support/preview_app.py (standard library, the kind an agent starts); the gateway is
``aiod start``; each is its own process on a random loopback port.

    .venv/bin/python bench/bench_preview.py [--calls 2000] [--downloads 5] [--mib 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import BIN, interleaved, listening, percentile
from tests.support.preview import APP, memory_kib

MIB = 1024 * 1024
PROXIED = "through /proxy/{port}/"
#: ``length``: a file download with ``Content-Length``; ``chunked``: a stream of unknown length.
FRAMINGS = ("length", "chunked")


def memory_mib(pid: int) -> dict[str, float]:
    return {name: kib / 1024 for name, kib in memory_kib(Path(f"/proc/{pid}/status").read_text()).items()}


async def download(session: aiohttp.ClientSession, url: str, size: int) -> float:
    """Seconds to receive ``size`` bytes from ``url`` (checked)."""
    started = time.perf_counter()
    received = 0
    async with session.get(url) as response:
        response.raise_for_status()
        async for chunk in response.content.iter_chunked(MIB):
            received += len(chunk)
    elapsed = time.perf_counter() - started
    assert received == size, (url, received)
    return elapsed


async def downloads(urls: dict[str, str], size: int, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in urls}
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        for url in urls.values():  # warm-up
            await download(session, url.replace(f"bytes={size}&", f"bytes={MIB}&"), MIB)
        for _ in range(rounds):
            for name, url in urls.items():
                samples[name].append(await download(session, url, size))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="small GETs per path")
    parser.add_argument("--downloads", type=int, default=5, help="downloads per path")
    parser.add_argument("--mib", type=int, default=100, help="size of one download")
    args = parser.parse_args()

    app_cmd = [sys.executable, str(APP)]
    aiod = [os.path.join(BIN, "aiod"), "start"]
    with listening(app_cmd, "/ready") as (app, _), listening(aiod) as (gateway, gateway_process):
        port = app.rsplit(":", 1)[1]
        proxied = f"{gateway}/proxy/{port}"
        with httpx.Client() as direct_client, httpx.Client() as proxy_client:

            def call(client: httpx.Client, url: str) -> None:
                response = client.get(url)
                assert response.status_code == 200 and response.json()["path"] == "/small"

            latencies = interleaved(
                {
                    "direct": lambda: call(direct_client, f"{app}/small"),
                    PROXIED: lambda: call(proxy_client, f"{proxied}/small"),
                },
                rounds=args.calls,
                warmup=100,
            )
        size = args.mib * MIB
        before = memory_mib(gateway_process.pid)
        urls = {
            f"{framing}, {path}": f"{base}/download?bytes={size}&framing={framing}"
            for framing in FRAMINGS
            for path, base in (("direct", app), (PROXIED, proxied))
        }
        times = asyncio.run(downloads(urls, size, args.downloads))
        after = memory_mib(gateway_process.pid)

    machine = f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    print(f"preview proxy benchmark, {time.strftime('%Y-%m-%d')}, {machine}")
    print(f"{'small GET (' + str(args.calls) + ' calls each)':<44} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in latencies.items():
        print(f"{name:<44} {percentile(values, 0.5):>8.2f} {percentile(values, 0.99):>8.2f}")
    added = percentile(latencies[PROXIED], 0.5) - percentile(latencies["direct"], 0.5)
    print(f"{'added p50 (target ≤ 1 ms)':<44} {added:>8.2f}")
    print()
    print(f"{f'{args.mib} MiB download ({args.downloads} each)':<44} {'MiB/s':>8} {'best':>8}")
    rates = {}
    for name, values in times.items():
        rates[name] = args.mib / sorted(values)[len(values) // 2]
        print(f"{name:<44} {rates[name]:>8.0f} {args.mib / min(values):>8.0f}")
    for framing in FRAMINGS:
        ratio = rates[f"{framing}, {PROXIED}"] / rates[f"{framing}, direct"]
        print(f"{f'{framing}: throughput ratio (target ≥ 0.5x)':<44} {ratio:>7.2f}x")
    print()
    print(f"{'gateway memory (MiB)':<44} {'before':>8} {'after':>8} {'growth':>8}")
    for name in ("VmRSS", "VmHWM"):
        label = "RSS" if name == "VmRSS" else "peak RSS (VmHWM)"
        print(f"{label:<44} {before[name]:>8.1f} {after[name]:>8.1f} {after[name] - before[name]:>8.1f}")


if __name__ == "__main__":
    main()
