"""sandboxd (issue 31): its ProcessService and its file transfers beside what they are held to, in one
run, interleaved.

1. ``Execute(["/bin/sh", "-c", "echo hi"])`` over gRPC (the official SDK's generated stub; the SDK's
   ``commands.run`` sends exactly this) beside ``sandbox_execute_bash`` ``echo hi`` through ``/mcp``
   and ``POST /v1/shell/exec`` in an existing session (target: gRPC p50 at most 1.2x MCP's).
2. A 100 MiB file ``PUT`` and ``GET`` through sandboxd's REST API beside a bare Starlette route doing
   the same (the body streamed into a file; a ``FileResponse``) in a process of its own (target: at
   least 0.5x the bare route's throughput).

The gateway is ``aiod start`` with ``SANDBOXD_ENABLED`` in its own process on free loopback ports;
every answer is checked.

    .venv/bin/python bench/bench_sandboxd.py [--calls 300] [--transfers 5] [--mib 100]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import grpc
import httpx
from k8s_agent_sandbox.commands._process_stubs import process_pb2 as pb
from k8s_agent_sandbox.commands._process_stubs import process_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import (
    BIN,
    interleaved,
    listening,
    parse_or_serve,
    percentile,
    print_latencies,
    timed,
    tool_call_body,
)
from tests.support.servers import free_port, wait_http

HEADERS = {"Accept": "application/json, text/event-stream"}
WARMUP = 20


def run_baseline(port: int) -> None:
    """The bare route: a body streamed into a file, a file answered with ``FileResponse``."""
    import anyio.to_thread
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.routing import Route

    from agentbox_common.serving import serve

    root = Path(os.environ["BENCH_BARE_ROOT"])

    async def put(request: Request) -> Response:
        handle = await anyio.to_thread.run_sync(open, root / request.path_params["name"], "wb")
        try:
            async for chunk in request.stream():
                await anyio.to_thread.run_sync(handle.write, chunk)
        finally:
            await anyio.to_thread.run_sync(handle.close)
        return Response(status_code=204)

    async def get(request: Request) -> Response:
        return FileResponse(root / request.path_params["name"], media_type="application/octet-stream")

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/files/{name}", put, methods=["PUT"]),
        Route("/files/{name}", get, methods=["GET"]),
        Route("/health", health),
    ]
    serve(Starlette(routes=routes), "127.0.0.1", port)


def commands(client: httpx.Client, gateway: str, stub: object) -> dict[str, Callable[[], None]]:
    mcp_body = tool_call_body("sandbox_execute_bash", {"cmd": "echo hi"})
    shell_id = client.post(f"{gateway}/v1/shell/sessions/create", json={}).json()["data"]["session_id"]
    request = pb.ExecuteRequest(config=pb.ProcessConfig(command=["/bin/sh", "-c", "echo hi"]))

    def via_grpc() -> None:
        answer = stub.Execute(request)  # type: ignore[attr-defined]
        assert (answer.stdout, answer.exit_code) == (b"hi\n", 0), answer

    def via_mcp() -> None:
        result = client.post(f"{gateway}/mcp", json=mcp_body, headers=HEADERS).json()["result"]
        assert not result["isError"] and json.loads(result["content"][0]["text"])["output"] == "hi\n", result

    def via_rest() -> None:
        data = client.post(f"{gateway}/v1/shell/exec", json={"command": "echo hi", "id": shell_id}).json()["data"]
        assert data["output"].strip() == "hi", data

    return {
        "sandboxd gRPC Execute (sh -c 'echo hi')": via_grpc,
        "MCP sandbox_execute_bash (baseline)": via_mcp,
        "REST /v1/shell/exec, session id": via_rest,
    }


def transfers(client: httpx.Client, rest: str, bare: str, data: bytes) -> dict[str, Callable[[], None]]:
    def put(url: str) -> Callable[[], None]:
        def call() -> None:
            assert client.put(url, content=data).status_code == 204

        return call

    def get(url: str) -> Callable[[], None]:
        def call() -> None:
            with client.stream("GET", url) as response:
                assert response.status_code == 200
                assert sum(len(chunk) for chunk in response.iter_raw()) == len(data)

        return call

    return {
        "sandboxd PUT /v1/files": put(f"{rest}/v1/files/bench.bin"),
        "bare Starlette PUT (baseline)": put(f"{bare}/files/bench.bin"),
        "sandboxd GET /v1/files": get(f"{rest}/v1/files/bench.bin"),
        "bare Starlette GET (baseline)": get(f"{bare}/files/bench.bin"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per contender")
    parser.add_argument("--transfers", type=int, default=5, help="timed transfers per contender")
    parser.add_argument("--mib", type=int, default=100, help="size of the transferred file")
    args = parse_or_serve(parser, run_baseline)
    if args is None:
        return
    root = Path(tempfile.mkdtemp(prefix="bench-sandboxd-"))
    (root / "sandboxd").mkdir()
    (root / "bare").mkdir()
    grpc_port, rest_port = free_port(), free_port()
    env = {
        "SANDBOXD_ENABLED": "true",
        "SANDBOXD_ROOT_DIR": str(root / "sandboxd"),
        "SANDBOXD_GRPC_PORT": str(grpc_port),
        "SANDBOXD_REST_PORT": str(rest_port),
        "AGENTBOX_BROWSER_PROXY_PORT": "0",
    }
    aiod = [os.path.join(BIN, "aiod"), "start"]
    bare_server = [sys.executable, os.path.abspath(__file__), "--baseline-server"]
    data = os.urandom(args.mib * 1024 * 1024)
    rest = f"http://127.0.0.1:{rest_port}"
    with (
        listening(aiod, "/health", env) as (gateway, _),
        listening(bare_server, "/health", {"BENCH_BARE_ROOT": str(root / "bare")}) as (bare, _),
        grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel,
        httpx.Client(timeout=120) as client,
    ):
        wait_http(f"{rest}/v1/health")  # the gateway answers /health before its lifespan starts sandboxd
        stub = process_pb2_grpc.ProcessServiceStub(channel)
        samples = interleaved(commands(client, gateway, stub), args.calls, WARMUP)
        print(f"echo hi, N={args.calls} each, calls interleaved, {os.cpu_count()} CPUs\n")
        print_latencies(samples, width=44)
        grpc_p50 = percentile(samples["sandboxd gRPC Execute (sh -c 'echo hi')"], 0.5)
        mcp_p50 = percentile(samples["MCP sandbox_execute_bash (baseline)"], 0.5)
        print(f"\ngRPC Execute / MCP p50: {grpc_p50 / mcp_p50:.2f}x (target <= 1.2x)\n")

        calls = transfers(client, rest, bare, data)
        for call in calls.values():  # the GETs need the files; one untimed round
            call()
        timings: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(args.transfers):
            for name, call in calls.items():
                timings[name].append(timed(call))
        print(f"{args.mib} MiB file, N={args.transfers} each, interleaved")
        print(f"{'transfer':<32} {'p50 s':>7} {'MiB/s':>8}")
        rates = {}
        for name, values in timings.items():
            p50 = sorted(values)[len(values) // 2]
            rates[name] = args.mib / p50
            print(f"{name:<32} {p50:>7.3f} {rates[name]:>8.0f}")
        for verb in ("PUT", "GET"):
            ratio = rates[f"sandboxd {verb} /v1/files"] / rates[f"bare Starlette {verb} (baseline)"]
            print(f"sandboxd {verb} / bare route throughput: {ratio:.2f}x (target >= 0.5x)")


if __name__ == "__main__":
    main()
