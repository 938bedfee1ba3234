"""Benchmark: navigate + read the page as Markdown through the gateway's REST page API (the
agent-sandbox SDK's ``browser_page.navigate`` + ``get_markdown``) against the same two steps through the
gateway's ``/mcp`` (``browser_navigate`` + ``browser_get_markdown``, aggregated from the browser program),
interleaved in the same run on the same browser program and Chromium.

    .venv/bin/python bench/bench_browser_rest.py [--rounds 100]

Target: REST p50 <= 1.1x the MCP p50."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from agent_sandbox import Sandbox

from bench._harness import gateway, interleaved, percentile, print_latencies, process_group, tool_call_body
from bench.bench_browser import SITE
from tests.support.requirements import chromium_path
from tests.support.servers import console_script, free_port, serve_app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    options = parser.parse_args()
    chromium = chromium_path()
    if chromium is None:
        sys.exit("bench_browser_rest: Chromium is not installed")
    port, cdp_port = free_port(), free_port()
    browser_url = f"http://127.0.0.1:{port}"
    browser_env = {
        "AGENTBOX_BROWSER_PORT": str(port),
        "AGENTBOX_CDP_PORT": str(cdp_port),
        "AGENTBOX_CHROMIUM": chromium,
        "LOG_LEVEL": "WARNING",
    }
    gateway_env = {
        "EXTRA_MCP_SERVERS": json.dumps({"browser": {"url": f"{browser_url}/mcp"}}),
        "AGENTBOX_BROWSER_URL": browser_url,
        "LOG_LEVEL": "WARNING",
    }
    with (
        serve_app(SITE) as site,
        process_group([console_script("agentbox-browser")], f"{browser_url}/health", browser_env, timeout=60),
        gateway(gateway_env) as base,
        httpx.Client(timeout=60) as http,
    ):
        sdk = Sandbox(base_url=base, timeout=60)
        counter = iter(range(1_000_000))

        def mcp(tool: str, arguments: dict) -> str:
            answer = http.post(f"{base}/mcp", json=tool_call_body(tool, arguments)).json()
            assert not answer["result"].get("isError"), answer
            return answer["result"]["content"][0]["text"]

        def through_rest() -> None:
            sdk.browser_page.navigate(url=f"{site}/page/{next(counter)}")
            assert "Bench page" in sdk.browser_page.get_markdown().data["markdown"]

        def through_mcp() -> None:
            mcp("browser_navigate", {"url": f"{site}/page/{next(counter)}"})
            assert "Bench page" in mcp("browser_get_markdown", {})

        samples = interleaved(
            {"REST navigate + get_markdown (SDK)": through_rest, "/mcp browser_navigate + get_markdown": through_mcp},
            rounds=options.rounds,
            warmup=10,
        )
    print(f"\nnavigate a local page + read it as Markdown, {options.rounds} rounds (interleaved)")
    print_latencies(samples, width=42)
    rest, via_mcp = (percentile(values, 0.5) for values in samples.values())
    print(f"\nratio p50 REST / MCP: {rest / via_mcp:.2f}x (target <= 1.1x)")


if __name__ == "__main__":
    main()
