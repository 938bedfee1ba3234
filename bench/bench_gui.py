"""GUI screenshot latency, measured side by side in one run.

``browser_gui_screenshot`` through the gateway's ``/mcp`` (``aiod start`` pointed at Chromium with
``AIO_CDP_URL``; a keep-alive httpx client posting the seed's JSON-RPC and decoding the image)
beside the same screenshot taken directly with Playwright (``connect_over_cdp`` +
``page.screenshot()``), and, as the floor, a bare ``Page.captureScreenshot`` on a raw DevTools
WebSocket. Target: gateway p50 at most 1.5x Playwright's. Calls alternate between the paths so all
see the same machine noise. Chromium is Debian's, headless, on a random loopback port.

    .venv/bin/python bench/bench_gui.py [--calls 100] [--warmup 5]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.headless_chromium import FLAGS as CHROMIUM_FLAGS

BIN = os.path.dirname(sys.executable)
#: A page with enough text and colour to make a realistic PNG.
PAGE = (
    "<!doctype html><title>bench</title><body style='margin:0;font:16px sans-serif;"
    "background:linear-gradient(135deg,#fde,#def)'>"
    + "".join(
        f"<p style='color:hsl({i * 37 % 360},60%,35%)'>Paragraph {i}: the quick brown fox jumps "
        "over the lazy dog, again and again, so that the screenshot is not a flat colour.</p>"
        for i in range(40)
    )
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=2)
            return
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready")


@contextlib.contextmanager
def process_group(args: list[str], ready_url: str, env: dict[str, str] | None = None) -> Iterator[None]:
    process = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_http(ready_url)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def timed(call: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    size = call()
    return (time.perf_counter() - started) * 1000, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or sys.exit("Chromium is not installed")
    cdp_port, gateway_port = free_port(), free_port()
    cdp_url = f"http://127.0.0.1:{cdp_port}"
    profile = tempfile.mkdtemp(prefix="bench-gui-")
    chromium_args = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        f"--remote-debugging-port={cdp_port}",
        "--remote-debugging-address=127.0.0.1",
        "--window-size=1280,800",
        "about:blank",
    ]
    gateway_args = [os.path.join(BIN, "aiod"), "start", "--port", str(gateway_port)]
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, profile, True)
        stack.enter_context(process_group(chromium_args, f"{cdp_url}/json/version"))
        stack.enter_context(
            process_group(
                gateway_args,
                f"http://127.0.0.1:{gateway_port}/health",
                {"AIO_CDP_URL": cdp_url, "LOG_LEVEL": "WARNING"},
            )
        )
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.connect_over_cdp(cdp_url)
        page = browser.contexts[0].pages[0]
        page.set_content(PAGE)
        page.bring_to_front()
        target = next(t for t in httpx.get(f"{cdp_url}/json/list").json() if t["type"] == "page")
        raw = stack.enter_context(connect(target["webSocketDebuggerUrl"], max_size=None, proxy=None))
        client = stack.enter_context(httpx.Client(timeout=60))
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "browser_gui_screenshot", "arguments": {}},
        }

        def via_gateway() -> int:
            result = client.post(f"http://127.0.0.1:{gateway_port}/mcp", json=request).json()["result"]
            assert not result.get("isError"), result
            return len(base64.b64decode(result["content"][0]["data"]))

        def via_playwright() -> int:
            return len(page.screenshot())

        message_ids = iter(range(1, 1_000_000))

        def via_raw_cdp() -> int:
            message_id = next(message_ids)
            raw.send(json.dumps({"id": message_id, "method": "Page.captureScreenshot", "params": {"format": "png"}}))
            while (reply := json.loads(raw.recv()))["id"] != message_id:
                pass
            return len(base64.b64decode(reply["result"]["data"]))

        paths = {
            "gateway /mcp browser_gui_screenshot": via_gateway,
            "Playwright page.screenshot() direct": via_playwright,
            "raw CDP Page.captureScreenshot (floor)": via_raw_cdp,
        }
        samples: dict[str, list[float]] = {name: [] for name in paths}
        sizes: dict[str, int] = {}
        for round_number in range(args.warmup + args.calls):
            for name, call in paths.items():
                elapsed, sizes[name] = timed(call)
                if round_number >= args.warmup:
                    samples[name].append(elapsed)
        width, height = page.evaluate("[innerWidth, innerHeight]")
        browser.close()

    print(
        f"GUI screenshot of a {width}x{height} page, {args.calls} calls per path (after {args.warmup} "
        f"warm-up), {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}\n"
    )
    print(f"| {'path':<40} | {'p50 ms':>7} | {'p99 ms':>7} | {'mean ms':>7} | {'PNG bytes':>9} |")
    print(f"|{'-' * 42}|{'-' * 9}|{'-' * 9}|{'-' * 9}|{'-' * 11}|")
    for name, values in samples.items():
        print(
            f"| {name:<40} | {percentile(values, 0.5):7.1f} | {percentile(values, 0.99):7.1f} | "
            f"{statistics.fmean(values):7.1f} | {sizes[name]:9d} |"
        )
    gateway, direct = (percentile(samples[name], 0.5) for name in list(paths)[:2])
    verdict = "meets" if gateway <= 1.5 * direct else "MISSES"
    print(f"\ngateway p50 / Playwright p50 = {gateway / direct:.2f}x ({verdict} the 1.5x target)")


if __name__ == "__main__":
    main()
