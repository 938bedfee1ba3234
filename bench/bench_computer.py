"""Benchmark: the display's accessibility tree through ``/v2/computer`` for a page of 1,000 elements,
beside what an agent would otherwise read, in the same run (interleaved, so all see the same machine
load): Chromium's own ``Accessibility.getFullAXTree`` of the page over a raw DevTools WebSocket, and
``GET /v2/computer/screenshot`` of the same display.

The desktop is the tests' (tests/support/desktop.py: Xvfb, a session D-Bus with at-spi2-core,
Chromium headful with ``--force-renderer-accessibility``); the gateway is ``aiod start`` in its own
process on a free loopback port, pointed at it.

    .venv/bin/python bench/bench_computer.py [--rounds 30] [--warmup 3]

Prints a table: p50 and p99 of each, and how many nodes each read returned."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import urllib.parse
from pathlib import Path

import httpx
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import gateway, interleaved, print_latencies
from tests.support.desktop import accessible_desktop

#: 1,000 elements: 250 each of headings, links, buttons and labelled text fields.
PAGE = "<!doctype html><title>thousand</title>" + "".join(
    f"<h3>Heading {n}</h3><a href='#a{n}'>Link {n}</a><button>Button {n}</button>"
    f"<label>Field {n} <input name=f{n}></label>"
    for n in range(250)
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    with accessible_desktop("data:text/html," + urllib.parse.quote(PAGE)) as desktop:
        env = {
            "AGENTBOX_DISPLAY": desktop.display,
            "AGENTBOX_SESSION_BUS": desktop.session_bus,
            "AIO_CDP_URL": desktop.cdp_url,
        }
        with gateway(env) as base, httpx.Client(base_url=base, timeout=120) as client:
            page = next(t for t in httpx.get(f"{desktop.cdp_url}/json/list").json() if t["type"] == "page")
            counts: dict[str, int] = {}
            ids = itertools.count(1)
            with connect(page["webSocketDebuggerUrl"], max_size=None) as cdp:

                def cdp_call(method: str) -> dict[str, object]:
                    sent = next(ids)
                    cdp.send(json.dumps({"id": sent, "method": method}))
                    while True:
                        reply = json.loads(cdp.recv())
                        if reply.get("id") == sent:
                            return dict(reply["result"])

                cdp_call("Accessibility.enable")

                def ax_tree() -> None:
                    counts["CDP Accessibility.getFullAXTree (page only)"] = len(
                        cdp_call("Accessibility.getFullAXTree")["nodes"]  # type: ignore[arg-type]
                    )

                def whole_tree() -> None:
                    params = {"scope": "desktop", "include_offscreen": "true", "max_nodes": "20000"}
                    response = client.get("/v2/computer/accessibility", params=params)
                    reply = response.json()["data"]
                    assert response.status_code == 200 and not reply["truncated"], response.text[:500]
                    counts["/v2/computer/accessibility (whole display)"] = reply["node_count"]

                def search() -> None:
                    params = {"role": "push button", "name": "Button 249", "include_offscreen": "true"}
                    nodes = client.get("/v2/computer/accessibility/nodes", params=params).json()["data"]["nodes"]
                    counts["/v2/computer/accessibility/nodes (one button)"] = len(nodes)

                def screenshot() -> None:
                    response = client.get("/v2/computer/screenshot")
                    assert response.status_code == 200
                    counts["/v2/computer/screenshot (PNG)"] = 0

                calls = {
                    "/v2/computer/accessibility (whole display)": whole_tree,
                    "/v2/computer/accessibility/nodes (one button)": search,
                    "CDP Accessibility.getFullAXTree (page only)": ax_tree,
                    "/v2/computer/screenshot (PNG)": screenshot,
                }
                samples = interleaved(calls, args.rounds, args.warmup)
    print(f"a page of 1,000 elements, {args.rounds} interleaved rounds")
    print_latencies(samples, width=48)
    print("nodes returned: " + ", ".join(f"{name}: {count}" for name, count in counts.items() if count))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
