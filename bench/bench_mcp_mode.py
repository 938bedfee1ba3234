"""MCP mode under load from its own agent, measured side by side in one run.

1. ``GET /healthz`` and ``read_file`` (MCP ``tools/call``) latency while a ``run_prompt`` is running
   (a stand-in agent that sleeps 3 s), beside the same figures idle. Target: busy p99 under twice
   idle p99 — a run must not stall the server (public aicodebox blocks its event loop for the whole
   run).
2. ``read_file`` through MCP mode beside the same read through the gateway's
   ``sandbox_file_operations`` (``aiod start`` on a free port), p50 and p99, calls alternating.

Every server is its own process (the real console scripts) on a random loopback port; the client
is a keep-alive httpx client.

    .venv/bin/python bench/bench_mcp_mode.py [--rounds 4] [--calls 500] [--run-seconds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import (
    BIN,
    free_port,
    gateway,
    interleaved,
    percentile,
    process_group,
    timed,
    tool_call_body,
)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

STAND_IN = """#!{python}
import json, sys, time
sys.stdin.read()
time.sleep({seconds})
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "bench"}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "done",
                  "session_id": "bench", "usage": {{}}}}))
"""


def tool_call(client: httpx.Client, url: str, name: str, arguments: dict, timeout: float = 30) -> dict:
    response = client.post(url, json=tool_call_body(name, arguments), headers=HEADERS, timeout=timeout)
    response.raise_for_status()
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()["result"]
    for line in response.text.splitlines():
        if line.startswith("data:"):
            return json.loads(line[5:])["result"]
    raise RuntimeError(f"no result in {response.text[:200]!r}")


def row(label: str, samples: list[float]) -> str:
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    return f"  {label:<44} {len(samples):>6} {p50:>9.2f} {p99:>9.2f}"


def header(title: str) -> None:
    print(f"\n{title}\n  {'':<44} {'calls':>6} {'p50 ms':>9} {'p99 ms':>9}")


def bench_busy(base: str, rounds: int, run_seconds: float) -> None:
    """Alternate idle windows and run windows of the same length, so both see the same machine noise."""
    mcp = f"{base}/mcp"
    window = run_seconds - 0.4
    samples: dict[str, list[float]] = {"idle health": [], "busy health": [], "idle read": [], "busy read": []}
    run_times: list[float] = []
    with httpx.Client() as client:

        def health() -> None:
            assert client.get(f"{base}/healthz").status_code == 200

        def read() -> None:
            assert tool_call(client, mcp, "read_file", {"path": "data.txt"})["isError"] is False

        def measure(state: str, until: float, stop: threading.Event | None = None) -> None:
            while time.monotonic() < until and not (stop and stop.is_set()):
                samples[f"{state} health"].append(timed(health))
                samples[f"{state} read"].append(timed(read))

        for _ in range(50):  # warm-up
            health()
            read()
        for _ in range(rounds):
            measure("idle", time.monotonic() + window)
            finished = threading.Event()
            outcome: dict = {}

            def run(outcome: dict = outcome, finished: threading.Event = finished) -> None:
                with httpx.Client() as other:
                    outcome["result"] = tool_call(other, mcp, "run_prompt", {"prompt": "wait"}, timeout=60)
                finished.set()

            runner = threading.Thread(target=run)
            started = time.monotonic()
            runner.start()
            time.sleep(0.3)  # the agent is up and sleeping
            measure("busy", started + 0.3 + window, finished)
            assert not finished.is_set(), "the run ended before the measurement window"
            runner.join(60)
            run_times.append((time.monotonic() - started) * 1000)
            assert outcome.get("result", {}).get("isError") is False, outcome
    header(
        f"1. MCP mode idle vs while a {run_seconds:g} s run_prompt is running "
        f"({rounds} alternating rounds; runs took {min(run_times):.0f}-{max(run_times):.0f} ms)"
    )
    print(row("GET /healthz, idle", samples["idle health"]))
    print(row("GET /healthz, during a run", samples["busy health"]))
    print(row("read_file (MCP tools/call), idle", samples["idle read"]))
    print(row("read_file (MCP tools/call), during a run", samples["busy read"]))
    for name in ("health", "read"):
        ratio = percentile(samples[f"busy {name}"], 0.99) / percentile(samples[f"idle {name}"], 0.99)
        verdict = "OK" if ratio < 2 else "OVER TARGET"
        label = "/healthz" if name == "health" else "read_file"
        print(f"  {label} p99 during a run / idle = {ratio:.2f}x (target < 2x) {verdict}")


def bench_gateway(mcp_base: str, workspace: Path, calls: int, tmp: Path) -> None:
    target = workspace / "data.txt"
    with contextlib.ExitStack() as stack:
        try:
            gateway_url = stack.enter_context(gateway({"HOME": str(tmp)}))
        except Exception as exc:  # the gateway is another helper's work; report instead of failing
            print(f"\n2. read_file vs gateway sandbox_file_operations: gateway unavailable ({exc})")
            return
        with httpx.Client() as client:

            def via_mcp_mode() -> None:
                assert tool_call(client, f"{mcp_base}/mcp", "read_file", {"path": "data.txt"})["isError"] is False

            def via_gateway() -> None:
                result = tool_call(
                    client,
                    f"{gateway_url}/mcp",
                    "sandbox_file_operations",
                    {"action": "read", "path": str(target)},
                )
                assert result.get("isError") is not True, result

            samples = interleaved({"ours": via_mcp_mode, "theirs": via_gateway}, calls, warmup=20)
        header("2. Reading the same 4 KiB file, calls alternating")
        print(row("MCP mode read_file", samples["ours"]))
        print(row("gateway sandbox_file_operations action=read", samples["theirs"]))
        difference = (statistics.median(samples["ours"]) - statistics.median(samples["theirs"])) * 1000
        print(f"  p50 difference (MCP mode - gateway): {difference:+.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="calls per side in the gateway comparison")
    parser.add_argument("--rounds", type=int, default=4, help="idle/run window pairs")
    parser.add_argument("--run-seconds", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-mode-") as temp:
        tmp = Path(temp)
        workspace = tmp / "workspace"
        workspace.mkdir()
        (workspace / "data.txt").write_text("line of text\n" * 315)  # ~4 KiB
        agent = tmp / "stand-in-agent"
        agent.write_text(STAND_IN.format(python=sys.executable, seconds=args.run_seconds))
        agent.chmod(0o755)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {
            "AICODEBOX_WORKSPACE": str(workspace),
            "AICODEBOX_MCP_MODE_PORT": str(port),
            "AICODEBOX_MCP_MODE_HOST": "127.0.0.1",
            "AICODEBOX_AGENT_BINARY": str(agent),
            "AICODEBOX_ADAPTER": "claude",
            "AICODEBOX_STATE_DIR": str(tmp / "state"),
        }
        print(f"MCP mode benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
        with process_group([os.path.join(BIN, "agentbox-mcp-mode")], f"{base}/healthz", env):
            bench_busy(base, args.rounds, args.run_seconds)
            bench_gateway(base, workspace, args.calls, tmp)


if __name__ == "__main__":
    main()
