"""What the preview-host dispatch (issue 26: previews on an origin of their own) costs every gateway
request, beside main's gateway in the same run, calls interleaved.

Every request now passes one more middleware that looks at ``Host``/``X-Forwarded-Host``/``Origin``
(a pass over the headers and a cached look-up). Timed, one keep-alive httpx client per contender,
both gateways with a key (``Authorization: Bearer``):

1. ``GET /health`` (the cheapest route: the guards are most of its cost), this code and main;
2. ``GET /v1/ping`` with the gateway's own ``Origin`` (the origin checks run), this code and main;
3. a small GET to an app (tests/support/preview_app.py) through ``/proxy/{port}/`` on main and on
   this code (which adds the sandbox policy header), and on this code's preview origin
   (``Host: {port}.localhost``, key in ``X-AIO-API-Key``).

Target: ratio to main <= 1.05 on 1 and 2. Both gateways are ``aiod start`` processes on random
loopback ports; main's runs from a ``git archive`` copy (its packages first on ``PYTHONPATH``).

    git archive main | tar -x -C /tmp/agentbox-main
    .venv/bin/python bench/bench_preview_host.py --main /tmp/agentbox-main [--calls 3000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import BIN, interleaved, listening, percentile
from tests.support.preview import APP

KEY = "bench-preview-host-key"
WARMUP = 200


@contextlib.contextmanager
def keyed_gateway(tree: Path | None) -> Iterator[str]:
    """``aiod start`` with a key: this code, or main's from a ``git archive`` copy."""
    env = {"AIO_API_KEY": KEY}
    if tree is None:
        with listening([os.path.join(BIN, "aiod"), "start"], "/health", env) as (url, _):
            yield url
        return
    env["PYTHONPATH"] = os.pathsep.join(str(tree / part) for part in ("services/gateway", "services/common", ""))
    with listening([os.path.join(BIN, "python"), "-m", "agentbox_gateway.cli", "start"], "/health", env) as (url, _):
        yield url


def getter(client: httpx.Client, url: str, headers: dict[str, str], status: int = 200) -> Callable[[], None]:
    def call() -> None:
        response = client.get(url, headers=headers)
        assert response.status_code == status, (url, response.status_code, response.text[:200])

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--main", required=True, metavar="DIR", help="a `git archive main` copy")
    args = parser.parse_args()
    bearer = {"Authorization": f"Bearer {KEY}"}
    with (
        keyed_gateway(None) as this,
        keyed_gateway(Path(args.main).resolve()) as other,
        listening([sys.executable, str(APP)], "/ready") as (app, _),
        contextlib.ExitStack() as clients,
    ):
        app_port = int(app.rsplit(":", 1)[1])
        this_port = int(this.rsplit(":", 1)[1])

        def client() -> httpx.Client:
            return clients.enter_context(httpx.Client(timeout=30))

        preview_host = {"Host": f"{app_port}.localhost:{this_port}", "X-AIO-API-Key": KEY}
        calls = {
            "GET /health, main": getter(client(), f"{other}/health", bearer),
            "GET /health, this": getter(client(), f"{this}/health", bearer),
            "GET /v1/ping + Origin, main": getter(client(), f"{other}/v1/ping", {**bearer, "Origin": other}),
            "GET /v1/ping + Origin, this": getter(client(), f"{this}/v1/ping", {**bearer, "Origin": this}),
            "app via /proxy/{port}/, main": getter(client(), f"{other}/proxy/{app_port}/x", bearer),
            "app via /proxy/{port}/, this": getter(client(), f"{this}/proxy/{app_port}/x", bearer),
            "app via {port}.localhost, this": getter(client(), f"{this}/x", preview_host),
        }
        samples = interleaved(calls, args.calls, WARMUP)
    print(f"{args.calls} calls each, interleaved, after {WARMUP} warm-up rounds\n")
    print(f"{'contender':<34} {'p50 ms':>8} {'p99 ms':>8} {'p50 / main':>11}")
    baseline: dict[str, float] = {}
    for name, values in samples.items():
        group, _, side = name.rpartition(", ")
        p50 = percentile(values, 0.5)
        if side == "main":
            baseline[group] = p50
        ratio = f"{p50 / baseline[group]:.3f}" if side == "this" and group in baseline else ""
        if group.startswith("app via {port}.localhost"):
            ratio = f"{p50 / baseline['app via /proxy/{port}/']:.3f}"
        print(f"{name:<34} {p50:>8.3f} {percentile(values, 0.99):>8.3f} {ratio:>11}")


if __name__ == "__main__":
    main()
