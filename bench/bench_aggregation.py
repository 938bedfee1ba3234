"""Aggregation overhead, measured side by side in one run.

1. A trivial upstream tool (an echo on a stateless ``mcp`` SDK server) called directly and through
   the gateway (``aiod start`` with ``EXTRA_MCP_SERVERS``): p50 and p99 of each, and the difference
   (target: at most 1 ms added at p50). Calls alternate between the paths so all see the same
   machine noise. Both eras are measured: handshake-era calls (no ``MCP-Protocol-Version``, as curl
   and most clients send them) and 2026-07-28 calls (version headers and ``_meta``). A plain ASGI
   app answering a fixed body shows what one uvicorn round trip costs on its own.
2. The same calls from 32 concurrent clients (threads, one keep-alive connection each): calls per
   second direct and through the gateway, rounds alternating.
3. ``tools/list`` on a gateway aggregating four upstreams, one of them a socket that accepts and
   never answers: wall time beside the configured bound (``AIO_MCP_LIST_TIMEOUT``), and beside the
   same gateway without the hanging upstream.
4. ``tools/list`` on a gateway aggregating 16 upstreams (entries of four upstream servers) beside a
   gateway with none and one with the list cache off (``AIO_MCP_LIST_CACHE_TTL=0``), interleaved
   (target: 16 upstreams, cached, at most 1.5x none at p50). With ``--compare-src DIR`` (a checkout's
   ``services`` folder, e.g. ``git archive main services | tar -x -C /tmp/main``), a fifth gateway
   runs that source, cached, in the same rounds: the cost of a change (the reachability check the
   cached list now needs) beside the code before it.

Every server is its own process on a random loopback port; the client is a keep-alive httpx client.

    .venv/bin/python bench/bench_aggregation.py [--calls 2000] [--lists 5] [--list-timeout 2] [--catalogue 300]
        [--only calls|concurrent|lists|catalogue] [--compare-src /tmp/main/services]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

BIN = os.path.dirname(sys.executable)
HEADERS = {"Accept": "application/json, text/event-stream"}


def serve_upstream(port: int) -> None:
    """Child mode: a stateless JSON-answering upstream with one trivial tool, ``echo``."""
    import uvicorn
    from mcp import types
    from mcp.server import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette

    async def on_list(ctx, params) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        return types.ListToolsResult(tools=[types.Tool(name="echo", description="Echo.", input_schema=schema)])

    async def on_call(ctx, params) -> types.CallToolResult:
        text = (params.arguments or {}).get("text", "")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server = Server("bench-upstream", on_list_tools=on_list, on_call_tool=on_call)
    inner = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with server.session_manager.run():
            yield

    app = Starlette(routes=inner.routes, lifespan=lifespan)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_floor(port: int) -> None:
    """Child mode: plain ASGI answering a fixed tools/call result, no MCP at all: the floor that
    uvicorn, loopback and the client cost on their own."""
    import uvicorn

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ping"}]}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def app(scope, receive, send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(port: int, process: subprocess.Popen, timeout: float = 30) -> None:
    """Until the port accepts connections (uvicorn binds once the app's start-up has run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise TimeoutError(f"port {port} not ready")


@contextlib.contextmanager
def spawn(args: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    process = subprocess.Popen(
        args,
        env={**os.environ, "LOG_LEVEL": "WARNING", **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_ready(port, process)
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def upstream(mode: str = "--serve-upstream") -> Iterator[str]:
    port = free_port()
    with spawn([sys.executable, __file__, mode, str(port)], port):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def hanging() -> Iterator[str]:
    """A listening socket nobody reads: the kernel accepts connections, nothing ever answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


@contextlib.contextmanager
def gateway(servers: dict[str, dict[str, str]], list_timeout: float, **extra_env: str) -> Iterator[str]:
    port = free_port()
    env = {
        "EXTRA_MCP_SERVERS": json.dumps(servers),
        "AIO_MCP_LIST_TIMEOUT": str(list_timeout),
        "AIO_API_KEY": "",
        **extra_env,
    }
    with spawn([os.path.join(BIN, "aiod"), "start", "--port", str(port)], port, env):
        yield f"http://127.0.0.1:{port}/mcp"


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


def post(client: httpx.Client, url: str, method: str, params: dict | None = None, *, modern: bool = False) -> dict:
    """The JSON-RPC answer (result or error) to one request, in the handshake or the 2026-07-28 era."""
    headers = dict(HEADERS)
    if modern:
        params = {**(params or {}), "_meta": MODERN_META}
        headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method})
        if params.get("name"):
            headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    response = client.post(url, json=body, headers=headers)
    response.raise_for_status()
    return response.json()


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_calls(calls: int, list_timeout: float) -> list[tuple[str, str, str, str]]:
    with (
        upstream() as direct_url,
        upstream("--serve-floor") as floor_url,
        gateway({"up": {"url": direct_url, "prefix": "up"}}, list_timeout) as gw_url,
    ):
        # name -> (url, tool, 2026-07-28 era)
        paths = {
            "direct to the upstream": (direct_url, "echo", False),
            "through the gateway": (gw_url, "up_echo", False),
            "direct to the upstream, 2026-07-28": (direct_url, "echo", True),
            "through the gateway, 2026-07-28": (gw_url, "up_echo", True),
            "plain ASGI floor (no MCP)": (floor_url, "echo", False),
        }
        samples: dict[str, list[float]] = {name: [] for name in paths}
        with httpx.Client(timeout=30) as client:
            post(client, gw_url, "tools/list")
            for i in range(calls + 200):
                for name, (url, tool, modern) in paths.items():
                    started = time.perf_counter()
                    answer = post(
                        client, url, "tools/call", {"name": tool, "arguments": {"text": "ping"}}, modern=modern
                    )
                    elapsed = (time.perf_counter() - started) * 1000
                    assert answer["result"]["content"][0]["text"] == "ping", (name, answer)
                    if i >= 200:  # warm-up excluded
                        samples[name].append(elapsed)
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    p99 = {name: percentile(values, 0.99) for name, values in samples.items()}
    rows = [
        (f"tools/call echo, {name}", f"{p50[name]:.2f}", f"{p99[name]:.2f}", str(len(samples[name]))) for name in paths
    ]
    for era, suffix in (("handshake era", ""), ("2026-07-28", ", 2026-07-28")):
        direct, through = f"direct to the upstream{suffix}", f"through the gateway{suffix}"
        rows.append(
            (
                f"added by the gateway, {era}",
                f"{p50[through] - p50[direct]:+.2f}",
                f"{p99[through] - p99[direct]:+.2f}",
                "target: p50 <= 1 ms",
            )
        )
    return rows


def bench_concurrent(clients: int, calls: int, rounds: int, list_timeout: float) -> list[tuple[str, str, str, str]]:
    def client_run(url: str, tool: str) -> None:
        with httpx.Client(timeout=30) as client:
            for _ in range(calls):
                answer = post(client, url, "tools/call", {"name": tool, "arguments": {"text": "ping"}})
                assert answer["result"]["content"][0]["text"] == "ping", answer

    with upstream() as direct_url, gateway({"up": {"url": direct_url, "prefix": "up"}}, list_timeout) as gw_url:
        paths = {"direct to the upstream": (direct_url, "echo"), "through the gateway": (gw_url, "up_echo")}
        rates: dict[str, list[float]] = {name: [] for name in paths}
        with httpx.Client(timeout=30) as client:
            post(client, gw_url, "tools/list")
        for _ in range(rounds):
            for name, (url, tool) in paths.items():
                started = time.perf_counter()
                with ThreadPoolExecutor(clients) as pool:
                    list(pool.map(client_run, [url] * clients, [tool] * clients))
                rates[name].append(clients * calls / (time.perf_counter() - started))
    return [
        (
            f"{clients} concurrent clients, {name}",
            f"{statistics.median(values):.0f}",
            " / ".join(f"{value:.0f}" for value in values),
            "",
        )
        for name, values in rates.items()
    ]


def bench_lists(lists: int, list_timeout: float) -> list[tuple[str, str, str, str]]:
    rows = []
    with upstream() as a, upstream() as b, upstream() as c, hanging() as h:
        healthy = {name: {"url": url, "prefix": name} for name, url in (("a", a), ("b", b), ("c", c))}
        cases = (("3 upstreams", healthy), ("4 upstreams, 1 hanging", {**healthy, "hang": {"url": h, "prefix": "h"}}))
        for label, servers in cases:
            with gateway(servers, list_timeout) as gw_url, httpx.Client(timeout=60) as client:
                times = []
                for _ in range(lists):
                    started = time.perf_counter()
                    tools = post(client, gw_url, "tools/list")["result"]["tools"]
                    times.append(time.perf_counter() - started)
                    assert sum(t["name"].endswith("_echo") for t in tools) == 3, [t["name"] for t in tools]
                rows.append(
                    (
                        f"tools/list, {label}",
                        f"{statistics.median(times):.3f}",
                        f"{max(times):.3f}",
                        f"bound {list_timeout:g} s",
                    )
                )
    return rows


def bench_catalogue(lists: int, list_timeout: float, compare_src: str | None) -> list[tuple[str, str, str, str]]:
    """``tools/list`` with 16 upstreams (cached and not) beside none, calls interleaved."""
    with upstream() as a, upstream() as b, upstream() as c, upstream() as d:
        servers = {f"u{n}": {"url": url, "prefix": f"u{n}"} for n, url in enumerate([a, b, c, d] * 4)}
        # PYTHONPATH comes before the editable install's finder: that gateway imports the other source.
        other = (
            {"PYTHONPATH": os.pathsep.join(os.path.join(compare_src, part) for part in ("gateway", "common"))}
            if compare_src
            else None
        )
        with (
            gateway({}, list_timeout) as none,
            gateway(servers, list_timeout) as cached,
            gateway(servers, list_timeout, AIO_MCP_LIST_CACHE_TTL="0") as uncached,
            gateway(servers, list_timeout, **other) if other else contextlib.nullcontext("") as compared,
            httpx.Client(timeout=60) as client,
        ):
            cases = {
                "tools/list, no upstreams (baseline)": (none, 0),
                "tools/list, 16 upstreams (cached)": (cached, 16),
                "tools/list, 16 upstreams (cache off)": (uncached, 16),
            }
            if compared:
                cases["tools/list, 16 upstreams (cached, --compare-src)"] = (compared, 16)
            samples: dict[str, list[float]] = {label: [] for label in cases}
            for round_ in range(lists + 10):
                for label, (url, count) in cases.items():
                    started = time.perf_counter()
                    tools = post(client, url, "tools/list")["result"]["tools"]
                    elapsed = time.perf_counter() - started
                    assert sum(t["name"].endswith("_echo") for t in tools) == count, [t["name"] for t in tools]
                    if round_ >= 10:
                        samples[label].append(elapsed)
    rows = [
        (label, f"{percentile(values, 0.5) * 1000:.2f}", f"{percentile(values, 0.99) * 1000:.2f}", str(len(values)))
        for label, values in samples.items()
    ]
    ratio = statistics.median(samples["tools/list, 16 upstreams (cached)"]) / statistics.median(
        samples["tools/list, no upstreams (baseline)"]
    )
    rows.append((f"target cached <= 1.5x none: {'met' if ratio <= 1.5 else 'MISSED'} ({ratio:.2f}x)", "", "", ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--lists", type=int, default=5)
    parser.add_argument("--list-timeout", type=float, default=2.0)
    parser.add_argument("--catalogue", type=int, default=300, help="tools/list calls per gateway in section 4")
    parser.add_argument("--only", choices=["calls", "concurrent", "lists", "catalogue"])
    parser.add_argument("--compare-src", help="a checkout's services folder, run cached beside this one in section 4")
    parser.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-floor", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return
    if args.serve_floor:
        serve_floor(args.serve_floor)
        return
    wanted = {args.only} if args.only else {"calls", "concurrent", "lists", "catalogue"}
    call_rows = bench_calls(args.calls, args.list_timeout) if "calls" in wanted else []
    concurrent_rows = bench_concurrent(32, 100, 3, args.list_timeout) if "concurrent" in wanted else []
    list_rows = bench_lists(args.lists, args.list_timeout) if "lists" in wanted else []
    catalogue_rows = (
        bench_catalogue(args.catalogue, args.list_timeout, args.compare_src) if "catalogue" in wanted else []
    )
    print(f"aggregation benchmark, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"{'case':<56} {'p50 ms':>9} {'p99 ms':>9}  samples")
    for row in call_rows:
        print(f"{row[0]:<56} {row[1]:>9} {row[2]:>9}  {row[3]}")
    print()
    print(f"{'case':<56} {'calls/s':>9}  all rounds")
    for row in concurrent_rows:
        print(f"{row[0]:<56} {row[1]:>9}  {row[2]}")
    print()
    print(f"{'case':<56} {'median s':>9} {'max s':>9}  bound")
    for row in list_rows:
        print(f"{row[0]:<56} {row[1]:>9} {row[2]:>9}  {row[3]}")
    print()
    print(f"{'case':<56} {'p50 ms':>9} {'p99 ms':>9}  samples")
    for row in catalogue_rows:
        print(f"{row[0]:<56} {row[1]:>9} {row[2]:>9}  {row[3]}")


if __name__ == "__main__":
    main()
