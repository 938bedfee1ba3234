"""Benchmark: browser_navigate through the browser program's /mcp against the same navigation done
directly with Playwright over CDP on the same Chromium, in the same run (interleaved, so both see the
same machine load); then the memory of the program and of its Chromium, idle with one blank page.

    .venv/bin/python bench/bench_browser.py [--iterations 200] [--shots 100]

Prints a table. Target: MCP p50 <= 1.5x the direct Playwright p50. Then ``browser_screenshot`` of the
same page beside Playwright's ``page.screenshot`` over CDP on the same Chromium and in a Chromium
Playwright launched itself (same binary, Playwright's own switches); target: MCP p50 <= 1.1x the
latter. Also the time from the program's spawn to its first answered ``browser_navigate``."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.requirements import chromium_path
from tests.support.servers import console_script, free_port, run_command, serve_app


async def article(request: Request) -> HTMLResponse:
    """A small but realistic page: a heading, text, a few links and a form."""
    links = "".join(f'<li><a href="/page/{n}">Item {n}</a></li>' for n in range(20))
    return HTMLResponse(
        f"<!doctype html><title>Bench {request.path_params['n']}</title><h1>Bench page</h1>"
        f"<p>{'Lorem ipsum dolor sit amet. ' * 40}</p><ul>{links}</ul>"
        "<form><input name=q placeholder=Search><button>Go</button></form>"
    )


SITE = Starlette(routes=[Route("/page/{n}", article)])


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            tree.setdefault(parent, []).append(int(entry))
    return tree


def _descendants(pid: int, tree: dict[int, list[int]]) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(tree.get(current, []))
    return found


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; PSS splits shared pages between the processes sharing them."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            rss = next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            pss = next(int(line.split()[1]) for line in handle if line.startswith("Pss:"))
        return rss, pss
    except (OSError, StopIteration):
        return 0, 0


def _command(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().split(b"\0")[0].decode(errors="replace")


def memory_rows(program_pid: int) -> list[tuple[str, int, int, int]]:
    """(what, processes, RSS MiB, PSS MiB) for the program, its Playwright driver and Chromium's tree."""
    tree = _children()
    groups: dict[str, list[int]] = {"browser program (python)": [program_pid]}
    for child in tree.get(program_pid, []):
        name = "Chromium tree" if "chrom" in _command(child) else "Playwright driver (node)"
        groups.setdefault(name, []).extend(_descendants(child, tree))
    rows = []
    for name, pids in groups.items():
        usage = [_memory_kib(pid) for pid in pids]
        rows.append((name, len(pids), sum(u[0] for u in usage) // 1024, sum(u[1] for u in usage) // 1024))
    return rows


def program_env(chromium: str, port: int, cdp_port: int) -> dict[str, str]:
    """The browser program's settings for a benchmark: its own ports, the given Chromium, quiet logs."""
    return {
        "AGENTBOX_BROWSER_PORT": str(port),
        "AGENTBOX_CDP_PORT": str(cdp_port),
        "AGENTBOX_CHROMIUM": chromium,
        "LOG_LEVEL": "WARNING",
    }


def timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--shots", type=int, default=100)
    options = parser.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("bench_browser: Chromium is not installed")

    port, cdp_port = free_port(), free_port()
    env = program_env(chromium, port, cdp_port)
    mcp_url = f"http://127.0.0.1:{port}/mcp"
    spawned = time.perf_counter()
    with (
        serve_app(SITE) as site,
        run_command(
            [console_script("agentbox-browser")],
            env=env,
            ready_url=f"http://127.0.0.1:{port}/health",
            timeout=60,
        ) as program,
        httpx.Client(timeout=60) as http,
        sync_playwright() as playwright,
    ):

        def mcp(tool: str, arguments: dict) -> None:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
            answer = http.post(mcp_url, json=body).json()
            assert not answer["result"].get("isError"), answer

        deadline = time.monotonic() + 30
        while http.get(f"http://127.0.0.1:{port}/health").json()["chromium"] != "running":
            assert time.monotonic() < deadline, "chromium did not start"
            time.sleep(0.05)
        mcp("browser_navigate", {"url": "about:blank"})
        first_navigate = time.perf_counter() - spawned
        time.sleep(2)
        fresh = memory_rows(program.pid)

        direct_browser = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{cdp_port}")
        page = direct_browser.contexts[0].new_page()
        page.set_viewport_size({"width": 1280, "height": 720})

        through_mcp: list[float] = []
        direct: list[float] = []
        for n in range(options.iterations + 10):
            # Each side drives its own tab, brought to the front (untimed) first: only the visible tab
            # paints, and a hidden one would load faster.
            mcp("browser_switch_tab", {"index": 0})
            mcp_ms = timed(lambda n=n: mcp("browser_navigate", {"url": f"{site}/page/{n}"}))
            page.bring_to_front()
            direct_ms = timed(lambda n=n: page.goto(f"{site}/page/{n}", wait_until="load"))
            if n >= 10:  # the first ones warm caches and connections up
                through_mcp.append(mcp_ms)
                direct.append(direct_ms)

        mcp("browser_switch_tab", {"index": 0})
        # The per-call cost alone: a trivial script, where the page does almost nothing.
        evaluate_mcp: list[float] = []
        evaluate_direct: list[float] = []
        for _ in range(options.iterations):
            evaluate_mcp.append(timed(lambda: mcp("browser_evaluate", {"script": "1 + 1"})))
            evaluate_direct.append(timed(lambda: page.evaluate("1 + 1")))

        # Screenshots of the same page: the program's tab, a CDP tab of the same Chromium, and a tab of
        # a Chromium Playwright launched with its own switches; each brought to the front, interleaved.
        shot_url = f"{site}/page/shot"
        mcp("browser_navigate", {"url": shot_url})
        page.goto(shot_url, wait_until="load")
        launched = playwright.chromium.launch(executable_path=chromium)
        own = launched.new_page(viewport={"width": 1280, "height": 720})
        own.goto(shot_url, wait_until="load")
        shots: dict[str, list[float]] = {
            "agentbox-browser POST /mcp browser_screenshot": [],
            "Playwright page.screenshot over CDP (same Chromium)": [],
            "Playwright page.screenshot, Chromium Playwright launched": [],
        }
        for n in range(options.shots + 5):
            mcp("browser_switch_tab", {"index": 0})
            samples = [timed(lambda: mcp("browser_screenshot", {}))]
            page.bring_to_front()
            samples.append(timed(lambda: page.screenshot()))
            samples.append(timed(lambda: own.screenshot()))
            if n >= 5:
                for values, sample in zip(shots.values(), samples, strict=True):
                    values.append(sample)
        launched.close()

        page.close()
        direct_browser.close()
        mcp("browser_navigate", {"url": "about:blank"})
        time.sleep(2)
        after = memory_rows(program.pid)

    p50_mcp, p50_direct = statistics.median(through_mcp), statistics.median(direct)
    print(f"\nbrowser_navigate to a local page, {options.iterations} iterations (interleaved), ms")
    print("| path | p50 | p99 | mean |")
    print("|---|---|---|---|")
    for name, samples in (
        ("agentbox-browser POST /mcp browser_navigate", through_mcp),
        ("Playwright page.goto over CDP (same Chromium)", direct),
    ):
        print(
            f"| {name} | {statistics.median(samples):.1f} | {percentile(samples, 0.99):.1f} "
            f"| {statistics.fmean(samples):.1f} |"
        )
    print(f"\nratio p50 MCP / direct: {p50_mcp / p50_direct:.2f}x (target <= 1.5x)")
    print("\nper-call cost: evaluate `1 + 1`, ms")
    print("| path | p50 | p99 |")
    print("|---|---|---|")
    for name, samples in (
        ("agentbox-browser POST /mcp browser_evaluate", evaluate_mcp),
        ("Playwright page.evaluate over CDP", evaluate_direct),
    ):
        print(f"| {name} | {statistics.median(samples):.1f} | {percentile(samples, 0.99):.1f} |")
    print(f"\nviewport screenshot (1280x720 PNG) of the same page, {options.shots} each, interleaved, ms")
    print("| path | p50 | p99 |")
    print("|---|---|---|")
    for name, samples in shots.items():
        print(f"| {name} | {statistics.median(samples):.1f} | {percentile(samples, 0.99):.1f} |")
    shot_mcp, _, shot_floor = (statistics.median(samples) for samples in shots.values())
    print(f"\nratio p50 MCP / Playwright-launched: {shot_mcp / shot_floor:.2f}x (target <= 1.1x)")
    print(f"\nstart-up: spawn -> first browser_navigate answered {first_navigate:.2f} s (one sample)")
    print("\nmemory, idle with one blank page (at start / after the run)")
    print("| process | count | RSS MiB | PSS MiB |")
    print("|---|---|---|---|")
    for (name, count, rss, pss), (_, count_after, rss_after, pss_after) in zip(fresh, after, strict=True):
        print(f"| {name} | {count} / {count_after} | {rss} / {rss_after} | {pss} / {pss_after} |")


if __name__ == "__main__":
    main()
