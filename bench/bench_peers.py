"""agentbox beside two peer MCP servers run locally, each pair called in turn in one run.

1. File reads: ``sandbox_file_operations`` read through the gateway's ``/mcp`` beside
   ``@modelcontextprotocol/server-filesystem``'s ``read_text_file`` (stdio), a 1 KiB and a 1 MiB
   text file.
2. Screenshots: the browser program's ``browser_screenshot`` beside ``@playwright/mcp``'s
   ``browser_take_screenshot`` (stdio, headless), both on Debian's Chromium, 1280x720, the same
   local page. Target (issue 18): agentbox at most @playwright/mcp's p50 (the reads have none).

Every client is the official MCP SDK's ``Client`` (streamable HTTP for agentbox, stdio for the
peers), so the clients' own costs are alike; every answer is checked. The peers are installed with
npm, at the versions below, into a cache folder on first use, and run with Node 22 when it is there
(``AGENTBOX_NODE22``), else ``node``.

    .venv/bin/python bench/bench_peers.py [--reads 200] [--shots 60] [--cache ~/.cache/agentbox-bench]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, print_latencies
from bench.bench_browser import SITE, program_env
from tests.support.requirements import chromium_path
from tests.support.servers import console_script, free_port, run_command, serve_app

PEERS = {"@modelcontextprotocol/server-filesystem": "2026.8.31", "@playwright/mcp": "0.0.83"}
NODE22 = "/var/cache/agentbox-ci/node22/package/bin/node"
KIB = 1024
MIB = 1024 * 1024


def install_peers(cache: Path) -> Path:
    """``node_modules`` with the pinned peers, installed by npm on first use."""
    modules = cache / "node_modules"
    wanted = [f"{name}@{version}" for name, version in PEERS.items()]
    installed = all((modules / name / "package.json").is_file() for name in PEERS)
    if not installed or not (cache / ".versions").is_file() or (cache / ".versions").read_text() != str(wanted):
        cache.mkdir(parents=True, exist_ok=True)
        npm = ["npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error", *wanted]
        subprocess.run(npm, check=True, timeout=600)
        (cache / ".versions").write_text(str(wanted))
    return modules


def node() -> str:
    candidate = os.environ.get("AGENTBOX_NODE22") or NODE22
    found = candidate if os.access(candidate, os.X_OK) else shutil.which("node")
    if found is None:
        sys.exit("bench_peers: node is not installed")
    return found


def text_of(result: Any) -> str:
    assert not result.is_error, result
    return "".join(getattr(part, "text", "") for part in result.content)


async def timed_rounds(
    calls: dict[str, Callable[[], Awaitable[None]]], rounds: int, warmup: int
) -> dict[str, list[float]]:
    """Like ``_harness.interleaved``, for coroutines: one of each per round."""
    for _ in range(warmup):
        for call in calls.values():
            await call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            await call()
            samples[name].append(time.perf_counter() - started)
    return samples


def write_files(folder: str) -> dict[str, Path]:
    files = {}
    for label, size in (("1 KiB", KIB), ("1 MiB", MIB)):
        files[label] = Path(folder, f"{size}.txt")
        files[label].write_text(("0123456789abcde\n" * (size // 16 + 1))[:size])
    return files


async def file_reads(
    url: str, folder: str, files: dict[str, Path], modules: Path, reads: int
) -> dict[str, list[float]]:
    peer = StdioServerParameters(
        command=node(), args=[str(modules / "@modelcontextprotocol/server-filesystem/dist/index.js"), folder]
    )
    async with Client(f"{url}/mcp") as ours, Client(peer) as theirs:
        calls: dict[str, Callable[[], Awaitable[None]]] = {}
        for label, path in files.items():
            size = path.stat().st_size

            async def agentbox(path: Path = path, size: int = size) -> None:
                arguments = {"action": "read", "path": str(path)}
                text = text_of(await ours.call_tool("sandbox_file_operations", arguments))
                assert len(text) > size, text[:200]  # the content inside aiod's JSON answer

            async def filesystem(path: Path = path, size: int = size) -> None:
                text = text_of(await theirs.call_tool("read_text_file", {"path": str(path)}))
                assert len(text) == size, text[:200]

            calls[f"agentbox sandbox_file_operations read, {label}"] = agentbox
            calls[f"server-filesystem read_text_file, {label}"] = filesystem
        return await timed_rounds(calls, reads, warmup=10)


@contextlib.contextmanager
def browser_program(chromium: str) -> Iterator[str]:
    """The browser program on free ports; yields its ``/mcp`` URL."""
    port, cdp_port = free_port(), free_port()
    ready = f"http://127.0.0.1:{port}/health"
    env = program_env(chromium, port, cdp_port)
    with run_command([console_script("agentbox-browser")], env=env, ready_url=ready, timeout=60):
        deadline = time.monotonic() + 60
        while httpx.get(ready).json()["chromium"] != "running":  # Chromium starts in the background
            assert time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"


async def screenshots(
    program: str, page: str, modules: Path, chromium: str, shots: int, output: str
) -> dict[str, list[float]]:
    """``output``: where @playwright/mcp saves each screenshot as a file too (its default behaviour)."""
    peer = StdioServerParameters(
        command=node(),
        args=[
            str(modules / "@playwright/mcp/cli.js"),
            "--headless",
            "--isolated",
            "--no-sandbox",  # root here, as agentbox's own Chromium runs
            "--executable-path",
            chromium,
            "--viewport-size",
            "1280x720",
            "--output-dir",
            output,
        ],
    )
    async with Client(program) as ours, Client(peer) as theirs:
        text_of(await ours.call_tool("browser_navigate", {"url": page}))
        text_of(await theirs.call_tool("browser_navigate", {"url": page}))

        async def agentbox() -> None:
            result = await ours.call_tool("browser_screenshot", {})
            assert not result.is_error and any(part.type == "image" for part in result.content), result

        async def playwright_mcp() -> None:
            result = await theirs.call_tool("browser_take_screenshot", {})
            assert not result.is_error and any(part.type == "image" for part in result.content), result

        calls = {
            "agentbox-browser browser_screenshot": agentbox,
            "@playwright/mcp browser_take_screenshot": playwright_mcp,
        }
        return await timed_rounds(calls, shots, warmup=5)


def ratios(samples: dict[str, list[float]], pairs: list[tuple[str, str]], target: float | None = None) -> None:
    """p50 ratios, agentbox over the peer, with the verdict when the issue sets a target."""
    for ours, theirs in pairs:
        ratio = statistics.median(samples[ours]) / statistics.median(samples[theirs])
        verdict = "" if target is None else f" (target <= {target}x: {'met' if ratio <= target else 'MISSED'})"
        print(f"p50 {ours} / {theirs}: {ratio:.2f}x{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=200, help="timed reads per contender and size")
    parser.add_argument("--shots", type=int, default=60, help="timed screenshots per contender")
    parser.add_argument("--cache", default="~/.cache/agentbox-bench", help="where npm installs the peers")
    options = parser.parse_args()
    modules = install_peers(Path(options.cache).expanduser())
    print(f"agentbox beside peer MCP servers, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, node {node()}")
    print(f"peers: {', '.join(f'{name} {version}' for name, version in PEERS.items())}\n")
    with tempfile.TemporaryDirectory() as folder, gateway() as url:
        reads = anyio.run(file_reads, url, folder, write_files(folder), modules, options.reads)
    print_latencies(reads, "file read (official SDK client)", max(map(len, reads)), counts=True)
    print()
    ratios(reads, list(zip(list(reads)[::2], list(reads)[1::2], strict=True)))
    chromium = chromium_path()
    if chromium is None:
        print("\nno Chromium: the screenshot comparison is skipped")
        return
    with serve_app(SITE) as site, browser_program(chromium) as program, tempfile.TemporaryDirectory() as output:
        shots = anyio.run(screenshots, program, f"{site}/page/shot", modules, chromium, options.shots, output)
    print()
    print_latencies(shots, "screenshot 1280x720, same page", max(map(len, shots)), counts=True)
    print()
    ratios(shots, [("agentbox-browser browser_screenshot", "@playwright/mcp browser_take_screenshot")], 1.0)


if __name__ == "__main__":
    main()
