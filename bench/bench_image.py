"""Image benchmark: size, cold-start times and idle memory of the agentbox image.

    python bench/bench_image.py [--image agentbox:latest] [--runs 5]

For each of ``--runs`` cold starts (a new container each time, ports published on 127.0.0.1 only) it
measures the time from `docker run` to the gateway's /health answering 200, to /ready answering 200, to
the first tools/list holding every tool (the count it holds once /ready said ok with the browser
serving, asked side by side with /ready from /health on) and to the first browser_navigate that
succeeds (tried every 20 ms from /health on, beside the listings); after the last start it lets the
container settle and reads its memory like `docker stats` does (usage minus inactive page cache), and
does the same once with ``DISABLE_BROWSER=true`` and once with ``BROWSER_START_MODE=manual``.
With ``--baseline IMAGE`` (an earlier build), that image is cold-started in the same rounds.
Interleaved with those starts, the floor: the same image running only ``python3 -m http.server`` on the
gateway's port, so Docker's own cost of creating, networking and starting a container (most of a second
on a small machine) is printed beside agentbox's; and the SDK's floor: the same image running only a
one-tool ``MCPServer`` of the official MCP SDK (the least any server built on the SDK can do), timed to
its first ``tools/list``. Results go to bench/results/image.json and are printed
beside the previous run's figures when that file exists.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
import httpx

RESULTS = Path(__file__).parent / "results" / "image.json"
TARGETS = {
    "api_ready_s": 1.0,
    "browser_ready_s": 2.0,
    "idle_memory_no_browser_mib": 150.0,
    "idle_memory_manual_mib": 100.0,
}
LABELS = {
    "image_size_mib": "image size (MiB)",
    "floor_ready_s": "floor: docker run -> http.server answers (s, median)",
    "sdk_floor_tools_s": "SDK floor: docker run -> one-tool MCPServer tools/list (s, median)",
    "api_ready_s": "docker run -> /health 200 (s, median)",
    "ready_s": "docker run -> /ready 200 (s, median)",
    "all_tools_s": "docker run -> tools/list has every tool (s, median)",
    "listed_after_ready": "listings with fewer tools once /ready said the browser serves (all runs)",
    "browser_ready_s": "docker run -> first browser_navigate (s, median)",
    "idle_memory_mib": "idle memory, whole container (MiB)",
    "idle_memory_no_browser_mib": "idle memory, DISABLE_BROWSER=true (MiB)",
    "idle_memory_manual_mib": "idle memory, BROWSER_START_MODE=manual (MiB)",
}
FLOOR_COMMAND = ["python3", "-m", "http.server", "8091", "--bind", "0.0.0.0"]
#: The official SDK's high-level server with one tool, stateless JSON answers, served by uvicorn.
SDK_FLOOR_SCRIPT = """
import uvicorn
from mcp.server import MCPServer
mcp = MCPServer("one-tool")
@mcp.tool(description="Echo a text.")
def echo(text: str) -> str:
    return text
uvicorn.run(mcp.streamable_http_app(json_response=True, stateless_http=True), host="0.0.0.0", port=8091,
            log_level="warning")
"""
SDK_FLOOR_COMMAND = ["/opt/agentbox/bin/python", "-c", SDK_FLOOR_SCRIPT]
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
POLL = 0.02
TIMEOUT = 120.0


def host_port(container: Any, port: int) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        container.reload()
        bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{port}/tcp") or []
        if bindings and bindings[0].get("HostPort"):
            return int(bindings[0]["HostPort"])
        time.sleep(POLL)
    raise TimeoutError(f"port {port} was not published")


def wait_health(client: httpx.Client, base: str, started: float) -> float:
    while time.monotonic() - started < TIMEOUT:
        try:
            if client.get(f"{base}/health", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(POLL)
    raise TimeoutError("/health never answered")


def wait_all_tools(client: httpx.Client, base: str, started: float) -> dict[str, float]:
    """Ask /ready and tools/list side by side until a second after /ready first said ok with the
    browser serving (its ``browser`` field; by default /ready does not wait for it): when each came,
    and how many listings after that had fewer tools than the final list (the promise: none)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    samples: list[tuple[float, bool, bool, int]] = []  # (s since start, ready, browser serving, tools)
    whole_at: float | None = None
    while time.monotonic() - started < TIMEOUT and (whole_at is None or time.monotonic() - whole_at < 1):
        try:
            answer = client.get(f"{base}/ready", timeout=5)
            tools = len(client.post(f"{base}/mcp", json=body, timeout=30).json()["result"]["tools"])
        except (httpx.HTTPError, ValueError, KeyError):
            time.sleep(POLL)
            continue
        now = time.monotonic()
        ready = answer.status_code == 200
        # manual: the browser waits for its first use, and the list is whole without it
        browser = answer.json().get("browser", "ready") in ("ready", "not started")
        samples.append((now - started, ready, browser, tools))
        if ready and browser and whole_at is None:
            whole_at = now
        time.sleep(POLL)
    if whole_at is None:
        raise TimeoutError("/ready never answered 200 with the browser serving")
    final = samples[-1][3]
    first_ready = next(i for i, sample in enumerate(samples) if sample[1])
    return {
        "ready_s": samples[first_ready][0],
        "all_tools_s": next(t for t, _, _, tools in samples if tools == final),
        "listed_after_ready": sum(tools < final for _, ready, browser, tools in samples if ready and browser),
    }


def wait_navigate(client: httpx.Client, base: str, started: float) -> float:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "browser_navigate", "arguments": {"url": "data:text/html,<h1>ready</h1>"}},
    }
    while time.monotonic() - started < TIMEOUT:
        try:
            answer = client.post(f"{base}/mcp", json=body, timeout=30).json()
            if "result" in answer and not answer["result"].get("isError"):
                return time.monotonic() - started
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(POLL)
    raise TimeoutError("browser_navigate never succeeded")


def container_memory_mib(container: Any) -> float:
    stats = container.stats(stream=False)["memory_stats"]
    detail = stats.get("stats", {})
    inactive = detail.get("inactive_file", detail.get("total_inactive_file", 0))
    return (stats["usage"] - inactive) / 2**20


def _first_answer(
    docker_client: docker.DockerClient, image: str, command: list[str], answered: Callable[[httpx.Client, str], bool]
) -> float:
    """Seconds from `docker run` of ``command`` (no entrypoint) in ``image`` to ``answered`` saying so."""
    started = time.monotonic()
    container = docker_client.containers.run(
        image, command, entrypoint=[], detach=True, ports={"8091/tcp": ("127.0.0.1", None)}
    )
    try:
        base = f"http://127.0.0.1:{host_port(container, 8091)}"
        with httpx.Client() as client:
            while time.monotonic() - started < TIMEOUT:
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                    if answered(client, base):
                        return time.monotonic() - started
                time.sleep(POLL)
        raise TimeoutError(f"{command[0]} in {image} never answered: {container.logs()[-2000:]!r}")
    finally:
        container.remove(force=True)


def floor_start(docker_client: docker.DockerClient, image: str) -> float:
    """Seconds from `docker run` to a bare HTTP server in the same image answering."""
    return _first_answer(docker_client, image, FLOOR_COMMAND, lambda client, base: bool(client.get(base, timeout=2)))


def sdk_floor_start(docker_client: docker.DockerClient, image: str) -> float:
    """Seconds from `docker run` to a one-tool SDK ``MCPServer`` in the same image listing its tool."""

    def listed(client: httpx.Client, base: str) -> bool:
        answer = client.post(f"{base}/mcp", json=LIST_TOOLS, headers=MCP_HEADERS, timeout=2)
        return answer.status_code == 200 and bool(answer.json()["result"]["tools"])

    return _first_answer(docker_client, image, SDK_FLOOR_COMMAND, listed)


def cold_start(
    docker_client: docker.DockerClient, image: str, settle: float | None, environment: dict[str, str] | None = None
) -> dict[str, float]:
    started = time.monotonic()
    container = docker_client.containers.run(
        image, detach=True, shm_size="1g", environment=environment, ports={"8091/tcp": ("127.0.0.1", None)}
    )
    try:
        base = f"http://127.0.0.1:{host_port(container, 8091)}"
        with httpx.Client() as client, httpx.Client() as browsing, ThreadPoolExecutor(1) as pool:
            figures = {"api_ready_s": wait_health(client, base, started)}
            # Side by side with the listings (which go on a second after the list is whole).
            navigated = None if environment else pool.submit(wait_navigate, browsing, base, started)
            figures.update(wait_all_tools(client, base, started))
            if navigated is not None:
                figures["browser_ready_s"] = navigated.result()
        if settle is not None:
            time.sleep(settle)
            figures["idle_memory_mib"] = container_memory_mib(container)
        return figures
    finally:
        container.remove(force=True)


def measure(image: str, runs: int, settle: float, baseline: str | None = None) -> dict[str, Any]:
    """``runs`` rounds of: the floor, ``baseline``'s cold start (when given), ``image``'s."""
    docker_client = docker.from_env(timeout=300)
    size = docker_client.images.get(image).attrs["Size"] / 2**20
    starts, floors, sdk_floors, baseline_starts = [], [], [], []
    for i in range(runs):
        floors.append(floor_start(docker_client, image))
        sdk_floors.append(sdk_floor_start(docker_client, image))
        if baseline:
            baseline_starts.append(cold_start(docker_client, baseline, None))
        starts.append(cold_start(docker_client, image, settle if i == runs - 1 else None))
    no_browser = cold_start(docker_client, image, settle, {"DISABLE_BROWSER": "true"})
    manual = cold_start(docker_client, image, settle, {"BROWSER_START_MODE": "manual"})
    beside = {"baseline": _medians(baseline, baseline_starts)} if baseline else {}
    return {
        "measured": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "image": image,
        "runs": runs,
        "image_size_mib": round(size, 1),
        "floor_ready_s": round(statistics.median(floors), 3),
        "sdk_floor_tools_s": round(statistics.median(sdk_floors), 3),
        "api_ready_s": round(statistics.median(s["api_ready_s"] for s in starts), 3),
        "ready_s": round(statistics.median(s["ready_s"] for s in starts), 3),
        "all_tools_s": round(statistics.median(s["all_tools_s"] for s in starts), 3),
        "listed_after_ready": int(sum(s["listed_after_ready"] for s in starts)),
        "browser_ready_s": round(statistics.median(s["browser_ready_s"] for s in starts), 3),
        "idle_memory_mib": round(starts[-1]["idle_memory_mib"], 1),
        "idle_memory_no_browser_mib": round(no_browser["idle_memory_mib"], 1),
        "idle_memory_manual_mib": round(manual["idle_memory_mib"], 1),
        "floor_ready_all_s": [round(f, 3) for f in floors],
        "sdk_floor_tools_all_s": [round(f, 3) for f in sdk_floors],
        "api_ready_all_s": [round(s["api_ready_s"], 3) for s in starts],
        "ready_all_s": [round(s["ready_s"], 3) for s in starts],
        "all_tools_all_s": [round(s["all_tools_s"], 3) for s in starts],
        "browser_ready_all_s": [round(s["browser_ready_s"], 3) for s in starts],
        **beside,
    }


def _medians(image: str, starts: list[dict[str, float]]) -> dict[str, Any]:
    keys = ("api_ready_s", "ready_s", "all_tools_s", "browser_ready_s")
    return {"image": image, **{key: round(statistics.median(s[key] for s in starts), 3) for key in keys}}


def table(current: dict[str, Any], previous: dict[str, Any] | None) -> str:
    baseline = current.get("baseline", {})
    header = f"{'metric':<50} {'this run':>10} {'baseline':>10} {'target':>10} {'previous':>10}"
    lines = [header, "-" * len(header)]
    for key, label in LABELS.items():
        target = TARGETS.get(key)
        target_text = f"< {target:g}" if target is not None else "-"
        if key not in current:
            continue
        old = previous.get(key) if previous else None
        flag = "" if target is None or current[key] < target else "  (over target)"
        lines.append(
            f"{label:<50} {current[key]:>10} {baseline.get(key, '-'):>10} {target_text:>10} "
            f"{old if old is not None else '-':>10}{flag}"
        )
    when = f"this run: {current['measured']}"
    if baseline:
        when += f"; baseline: {baseline['image']}, interleaved in the same rounds"
    if previous:
        when += f"; previous: {previous.get('measured', '?')} ({previous.get('image', '?')})"
    return "\n".join([*lines, when])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="agentbox:latest", help="image to measure (default agentbox:latest)")
    parser.add_argument("--runs", type=int, default=5, help="cold starts to take the median of (default 5)")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds idle before reading memory")
    parser.add_argument("--baseline", help="another image (an earlier build) cold-started in the same rounds")
    args = parser.parse_args(argv)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else None
    current = measure(args.image, max(1, args.runs), args.settle, args.baseline)
    print(table(current, previous))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(current, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
