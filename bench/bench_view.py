"""Live-view benchmark: what the display stack (Xvfb + x11vnc) costs, and how fast the live view
follows the browser.

    python bench/bench_view.py [--image agentbox:latest] [--samples 15] [--settle 20]

Two containers of the same image, one with the display stack (the default) and one with
``DISABLE_VNC=true`` (the baseline), each left idle ``--settle`` seconds, then:
- idle memory of the whole container (as ``docker stats`` counts it) and the RSS of Xvfb + x11vnc;
- idle CPU of Xvfb + x11vnc over 20 s with a noVNC client connected and nothing changing on screen
  (percent of one core, from /proc/<pid>/stat);
- live-view latency: ``browser_navigate`` to a solid-colour page, from its answer to the noVNC
  canvas (in a headless Chromium on the host) showing the colour; p50 and p90 of ``--samples``.
Results go to bench/results/view.json, printed beside the previous run's when that file exists.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docker
import httpx
from playwright.sync_api import sync_playwright

from bench.bench_image import container_memory_mib, host_port, wait_health, wait_navigate

RESULTS = Path(__file__).parent / "results" / "view.json"
TARGETS = {"memory_added_mib": 60.0, "live_view_p50_ms": 300.0, "display_idle_cpu_pct": 1.0}
CPU_WINDOW = 20.0
_CANVAS_PIXEL = """() => {
  const canvas = document.querySelector('#noVNC_container canvas');
  if (!canvas || !canvas.width) return [];
  return Array.from(canvas.getContext('2d').getImageData(canvas.width / 2, canvas.height * 0.8, 1, 1).data);
}"""


def _exec(container: Any, command: str) -> str:
    return container.exec_run(["bash", "-c", command]).output.decode()


def display_rss_mib(container: Any) -> float:
    out = _exec(container, "ps -o rss= -C Xvfb,x11vnc || true")
    return sum(int(v) for v in out.split()) / 1024


def display_cpu_ticks(container: Any) -> tuple[int, int]:
    """utime + stime of Xvfb and x11vnc (clock ticks), and ticks per second."""
    out = _exec(
        container,
        "for p in $(pgrep -x Xvfb) $(pgrep -x x11vnc); do cut -d' ' -f14,15 /proc/$p/stat; done; getconf CLK_TCK",
    )
    values = out.split()
    return sum(int(v) for v in values[:-1]), int(values[-1])


def call(client: httpx.Client, base: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return client.post(f"{base}/mcp", json=body, timeout=60).json()["result"]


def run(image: str, env: dict[str, str], settle: float, samples: int) -> dict[str, float]:
    docker_client = docker.from_env(timeout=300)
    started = time.monotonic()
    container = docker_client.containers.run(
        image, detach=True, shm_size="1g", environment=env, ports={"8091/tcp": ("127.0.0.1", None)}
    )
    try:
        base = f"http://127.0.0.1:{host_port(container, 8091)}"
        with httpx.Client() as client:
            wait_health(client, base, started)
            wait_navigate(client, base, started)
            time.sleep(settle)
            figures = {"idle_memory_mib": container_memory_mib(container)}
            if env.get("DISABLE_VNC") == "true":
                return figures
            figures["display_memory_mib"] = display_rss_mib(container)
            info = json.loads(call(client, base, "browser_get_info", {})["content"][0]["text"])
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox"]
                )
                page = browser.new_page()
                page.goto(info["vnc_url"])
                page.wait_for_function("document.querySelector('#noVNC_container canvas')?.width > 0", timeout=30_000)
                time.sleep(3)
                before, hz = display_cpu_ticks(container)
                time.sleep(CPU_WINDOW)
                after, _ = display_cpu_ticks(container)
                figures["display_idle_cpu_pct"] = 100 * (after - before) / hz / CPU_WINDOW
                latencies = []
                for i in range(samples):
                    rgb = (0, 200, 80) if i % 2 == 0 else (200, 40, 0)
                    url = f"data:text/html,<body style='margin:0;background:rgb{rgb}'>"
                    assert not call(client, base, "browser_navigate", {"url": url}).get("isError")
                    shown = time.monotonic()
                    while page.evaluate(_CANVAS_PIXEL)[:3] != list(rgb):
                        if time.monotonic() - shown > 10:
                            raise TimeoutError(f"the live view never showed rgb{rgb}")
                        time.sleep(0.005)
                    latencies.append((time.monotonic() - shown) * 1000)
                browser.close()
            figures["live_view_p50_ms"] = statistics.median(latencies)
            figures["live_view_p90_ms"] = statistics.quantiles(latencies, n=10)[-1]
            return figures
    finally:
        container.remove(force=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="agentbox:latest")
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--settle", type=float, default=20.0)
    args = parser.parse_args(argv)
    with_display = run(args.image, {}, args.settle, args.samples)
    baseline = run(args.image, {"DISABLE_VNC": "true"}, args.settle, args.samples)
    current = {
        **with_display,
        "idle_memory_disable_vnc_mib": baseline["idle_memory_mib"],
        "memory_added_mib": with_display["idle_memory_mib"] - baseline["idle_memory_mib"],
    }
    previous = json.loads(RESULTS.read_text())["figures"] if RESULTS.exists() else None
    for name, value in current.items():
        old = f"  (previous {previous[name]:.1f})" if previous and name in previous else ""
        target = f"  target <= {TARGETS[name]:g}" if name in TARGETS else ""
        print(f"{name:32s} {value:8.1f}{old}{target}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps({"date": datetime.date.today().isoformat(), "image": args.image, "figures": current}, indent=2)
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
