"""The file plane under load, each figure beside a baseline measured in the same run.

1. Throughput: 32 concurrent clients reading a small file through ``/mcp``
   (``sandbox_file_operations`` read) beside a bare Starlette route doing the same read (one worker
   thread hop, a JSON answer) served the same way (uvicorn via ``agentbox_common.serving.serve`` in
   its own process). Target: MCP at least half the bare route's requests/second.
2. Idle RSS of the gateway (``aiod start``) after start-up, beside the bare Starlette server's.
3. 1 MiB binary transfer: ``POST /v1/file/upload`` and ``GET /v1/file/download`` p50/p99 beside the MCP
   equivalents (``write`` with base64 content, ``read`` with ``encoding: base64``).
4. Read latency, one client: a 1 KiB, a 1 MiB and a 16 MiB text file read through ``/mcp`` beside
   the bare route reading the same file (targets: MCP p50 at most 1.3x the route's for 1 KiB, 1.8x
   for 1 MiB, 2.5x for 16 MiB; the 16 MiB file is read a tenth as often).
5. Write latency, one client: 1 MiB of text written through ``/mcp`` beside a bare route writing
   it (target: MCP p50 at most 2.0x the route's).

Rounds alternate between contenders so both see the same noise; every answer is checked.

    .venv/bin/python bench/bench_files.py [--requests 2000] [--rounds 3] [--transfers 40] [--reads 300]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import (
    BIN,
    interleaved,
    listening,
    parse_or_serve,
    percentile,
    print_latencies,
    rss_mib,
    tool_call_body,
)

CONCURRENCY = 32
SMALL_TEXT = "3\n7\n12\n5\n"
KIB = 1024
MIB = 1024 * 1024
#: Read sizes and their targets (MCP p50 at most this many times the bare route's).
READ_SIZES = {KIB: 1.3, MIB: 1.8, 16 * MIB: 2.5}


def run_baseline(port: int) -> None:
    """The bare route: the same read in one worker-thread hop, answered as JSON, served like aiod."""
    import anyio.to_thread
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from agentbox_common.serving import serve

    async def read(request: Request) -> JSONResponse:
        path = (await request.json())["path"]

        def job() -> str:
            with open(path, "rb") as handle:
                return handle.read().decode("utf-8")

        content = await anyio.to_thread.run_sync(job)
        return JSONResponse({"action": "read", "content": content, "path": path, "success": True})

    async def write(request: Request) -> JSONResponse:
        body = await request.json()
        path, data = body["path"], body["content"].encode("utf-8")

        def job() -> int:
            with open(path, "wb") as handle:
                return handle.write(data)

        written = await anyio.to_thread.run_sync(job)
        return JSONResponse({"action": "write", "bytes_written": written, "path": path, "success": True})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    serve(
        Starlette(
            routes=[
                Route("/read", read, methods=["POST"]),
                Route("/write", write, methods=["POST"]),
                Route("/health", health),
            ]
        ),
        "127.0.0.1",
        port,
    )


async def throughput(call: Callable[[httpx.AsyncClient], Awaitable[None]], requests: int) -> float:
    """Requests/second of ``requests`` calls spread over 32 concurrent keep-alive clients."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        for _ in range(CONCURRENCY):  # warm the connections
            await call(client)
        remaining = requests

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await call(client)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return requests / (time.perf_counter() - started)


def read_calls(
    client: httpx.Client, gateway: str, bare: str, workdir: Path, size: int
) -> dict[str, Callable[[], None]]:
    """A text file of ``size`` bytes read through ``/mcp`` and through the bare route, answers checked."""
    text = ("0123456789abcdef" * (size // 16 + 1))[: size - 1] + "\n"
    path = workdir / f"read-{size}.txt"
    path.write_text(text)
    expected = {"action": "read", "content": text, "path": str(path), "success": True}
    body = tool_call_body("sandbox_file_operations", {"action": "read", "path": str(path)})
    label = f"{size // KIB} KiB" if size < MIB else f"{size // MIB} MiB"

    def via_mcp() -> None:
        result = client.post(f"{gateway}/mcp", json=body).json()["result"]
        assert not result["isError"] and json.loads(result["content"][0]["text"]) == expected

    def via_bare() -> None:
        assert client.post(f"{bare}/read", json={"path": str(path)}).json() == expected

    return {f"MCP read {label}": via_mcp, f"bare Starlette route {label} (baseline)": via_bare}


def write_calls(client: httpx.Client, gateway: str, bare: str, workdir: Path) -> dict[str, Callable[[], None]]:
    """1 MiB of text written through ``/mcp`` and through the bare route, answers checked."""
    text = ("0123456789abcdé\n" * (MIB // 16 + 1))[:MIB]
    size = len(text.encode())
    mcp_path, bare_path = workdir / "write-mcp.txt", workdir / "write-bare.txt"
    body = tool_call_body("sandbox_file_operations", {"action": "write", "path": str(mcp_path), "content": text})

    def via_mcp() -> None:
        result = client.post(f"{gateway}/mcp", json=body).json()["result"]
        assert not result["isError"] and json.loads(result["content"][0]["text"])["bytes_written"] == size, result

    def via_bare() -> None:
        answer = client.post(f"{bare}/write", json={"path": str(bare_path), "content": text}).json()
        assert answer["bytes_written"] == size, answer

    return {"MCP write 1 MiB text": via_mcp, "bare Starlette route 1 MiB (baseline)": via_bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="reads per contender per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transfers", type=int, default=40, help="1 MiB transfers per contender")
    parser.add_argument("--reads", type=int, default=300, help="timed reads per contender and size")
    args = parse_or_serve(parser, run_baseline)
    if args is None:
        return

    workdir = Path(tempfile.mkdtemp(prefix="bench-files-"))
    small = workdir / "small.txt"
    small.write_text(SMALL_TEXT)
    expected = {"action": "read", "content": SMALL_TEXT, "path": str(small), "success": True}
    aiod = [os.path.join(BIN, "aiod"), "start"]
    baseline = [sys.executable, os.path.abspath(__file__), "--baseline-server"]

    with listening(aiod) as (gateway, gateway_process), listening(baseline) as (bare, bare_process):
        time.sleep(1.0)
        idle = {
            "aiod (gateway)": rss_mib(gateway_process.pid),
            "bare Starlette route": rss_mib(bare_process.pid),
        }

        mcp_body = tool_call_body("sandbox_file_operations", {"action": "read", "path": str(small)})

        async def via_mcp(client: httpx.AsyncClient) -> None:
            result = (await client.post(f"{gateway}/mcp", json=mcp_body)).json()["result"]
            assert not result["isError"] and json.loads(result["content"][0]["text"]) == expected, result

        async def via_bare(client: httpx.AsyncClient) -> None:
            assert (await client.post(f"{bare}/read", json={"path": str(small)})).json() == expected

        rates: dict[str, list[float]] = {
            "MCP sandbox_file_operations read": [],
            "bare Starlette route (baseline)": [],
        }
        for _ in range(args.rounds):
            rates["MCP sandbox_file_operations read"].append(asyncio.run(throughput(via_mcp, args.requests)))
            rates["bare Starlette route (baseline)"].append(asyncio.run(throughput(via_bare, args.requests)))

        payload = os.urandom(MIB)
        blob = workdir / "blob.bin"
        blob.write_bytes(payload)
        encoded = base64.b64encode(payload).decode()
        with httpx.Client(timeout=60) as client:

            def upload() -> None:
                response = client.post(
                    f"{gateway}/v1/file/upload",
                    files={"file": ("up.bin", payload)},
                    data={"path": str(workdir / "up.bin")},
                )
                assert response.json()["data"]["file_size"] == MIB

            def mcp_write() -> None:
                body = tool_call_body(
                    "sandbox_file_operations",
                    {
                        "action": "write",
                        "path": str(workdir / "mcp.bin"),
                        "content": encoded,
                        "encoding": "base64",
                    },
                )
                result = client.post(f"{gateway}/mcp", json=body).json()["result"]
                assert json.loads(result["content"][0]["text"])["bytes_written"] == MIB

            def download() -> None:
                assert client.get(f"{gateway}/v1/file/download", params={"path": str(blob)}).content == payload

            def mcp_read() -> None:
                body = tool_call_body(
                    "sandbox_file_operations", {"action": "read", "path": str(blob), "encoding": "base64"}
                )
                result = client.post(f"{gateway}/mcp", json=body).json()["result"]
                assert json.loads(result["content"][0]["text"])["content"] == encoded

            calls = {
                "upload POST /v1/file/upload": upload,
                "MCP write (base64 content)": mcp_write,
                "download GET /v1/file/download": download,
                "MCP read (encoding base64)": mcp_read,
            }
            transfers = interleaved(calls, args.transfers, warmup=1)
            reads = {
                size: interleaved(
                    read_calls(client, gateway, bare, workdir, size), max(args.reads // (10 if size > MIB else 1), 5), 3
                )
                for size in READ_SIZES
            }
            writes = interleaved(write_calls(client, gateway, bare, workdir), args.reads, warmup=5)

    print(f"file plane, {os.cpu_count()} CPUs, loopback, rounds alternate between contenders\n")
    print(f"1. small-file read, {CONCURRENCY} concurrent clients, {args.requests} requests x {args.rounds} rounds")
    print(f"{'contender':<40} {'req/s (median)':>15} {'all rounds':>26}")
    medians = {}
    for name, values in rates.items():
        medians[name] = sorted(values)[len(values) // 2]
        print(f"{name:<40} {medians[name]:>15.0f} {' / '.join(f'{v:.0f}' for v in values):>26}")
    mcp_rate, bare_rate = medians.values()
    verdict = "met" if mcp_rate >= bare_rate / 2 else "MISSED"
    print(f"target MCP >= 1/2 bare route: {verdict} (ratio {mcp_rate / bare_rate:.2f})\n")
    print("2. idle RSS after start-up")
    for name, value in idle.items():
        print(f"{name:<40} {value:>10.1f} MiB")
    print(f"\n3. 1 MiB binary transfer, N={args.transfers} each, interleaved")
    print_latencies(transfers)
    print(f"\n4. text read latency, one keep-alive client, N={args.reads} each, interleaved")
    for size, samples in reads.items():
        print_latencies(samples)
        mcp, route = (percentile(values, 0.5) for values in samples.values())
        target = READ_SIZES[size]
        verdict = "met" if mcp <= target * route else "MISSED"
        print(f"target MCP p50 <= {target}x route p50: {verdict} (ratio {mcp / route:.2f})\n")
    print(f"5. text write latency, one keep-alive client, N={args.reads} each, interleaved")
    print_latencies(writes)
    mcp, route = (percentile(values, 0.5) for values in writes.values())
    verdict = "met" if mcp <= 2.0 * route else "MISSED"
    print(f"target MCP p50 <= 2.0x route p50: {verdict} (ratio {mcp / route:.2f})\n")
    for path in workdir.iterdir():
        path.unlink()
    workdir.rmdir()


if __name__ == "__main__":
    main()
