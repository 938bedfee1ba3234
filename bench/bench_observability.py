"""What metrics and access logs cost on the hot path (issue 20's target: at most 1.05x).

``sandbox_execute_bash`` with ``echo hi`` through ``/mcp`` of two gateways started side by side in
one run: one with ``/metrics`` and the access log on (the defaults, logging one line per request as
JSON to a file, as under supervisord), one with ``AGENTBOX_METRICS=false AGENTBOX_ACCESS_LOG=false``.
Calls alternate between the two so both see the same machine noise; the ratio of the p50s is the
figure. The unknown-tool call (no command runs) shows the fixed cost alone, and a second gateway
with the same "on" configuration (A/A) shows how far two identical processes differ on this machine.

    .venv/bin/python bench/bench_observability.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, percentile, print_latencies, tool_call_body

HEADERS = {"Accept": "application/json, text/event-stream"}
ON = {"LOG_FORMAT": "json", "AGENTBOX_METRICS": "true", "AGENTBOX_ACCESS_LOG": "true"}
OFF = {"LOG_FORMAT": "json", "AGENTBOX_METRICS": "false", "AGENTBOX_ACCESS_LOG": "false"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    echo = tool_call_body("sandbox_execute_bash", {"cmd": "echo hi"})
    unknown = tool_call_body("no_such_tool", {})

    with (
        gateway(ON) as on_url,
        gateway(OFF) as off_url,
        gateway(ON) as twin_url,
        httpx.Client(headers=HEADERS) as client,
    ):

        def call(url: str, body: dict) -> object:
            def once() -> None:
                answer = client.post(f"{url}/mcp", json=body).json()
                if body is echo:
                    assert json.loads(answer["result"]["content"][0]["text"])["output"] == "hi\n", answer
                else:
                    assert answer["error"]["code"] == -32602, answer

            return once

        samples = interleaved(
            {
                "echo hi, metrics + access log on": call(on_url, echo),
                "echo hi, both off": call(off_url, echo),
                "unknown tool, on": call(on_url, unknown),
                "unknown tool, off": call(off_url, unknown),
                "echo hi, on (identical second process)": call(twin_url, echo),
            },
            rounds=args.calls,
            warmup=50,
        )
        assert client.get(f"{on_url}/metrics").status_code == 200
        assert client.get(f"{off_url}/metrics").status_code == 404

    print_latencies(samples, width=36)
    names = list(samples)
    for on_name, off_name in ((names[0], names[1]), (names[2], names[3]), (names[4], names[0])):
        ratio = percentile(samples[on_name], 0.5) / percentile(samples[off_name], 0.5)
        print(f"p50 ratio {on_name} / {off_name}: {ratio:.3f}x")


if __name__ == "__main__":
    main()
