"""A whole directory as tar, both ways: ``GET``/``PUT /v2/fs/tree`` (the gateway's in-process
``tarfile``, every member checked, staged and renamed) beside ``tar`` piped over a bare Starlette
route serving the same tree (the floor: ``tar -c`` streamed out, the body piped into ``tar -x``,
no checks), each in its own process served the same way (uvicorn via
``agentbox_common.serving.serve``) on loopback.

The tree is ``--files`` files of random bytes (100 MiB in all by default) in 20 directories. An
upload sends the same in-memory tar (made once by ``tar``) to a directory that does not exist yet,
removed after the round, untimed. Contenders alternate within a round, ``--passes`` rounds after a
warm-up one; each transfer is checked (bytes received; files and bytes landed).
Target: the tree's MiB/s at least 0.5x the bare route's, each way.

    .venv/bin/python bench/bench_v2_fs.py [--mib 100] [--files 400] [--passes 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._harness import BIN, listening, parse_or_serve

MIB = 1024 * 1024
CHUNK = MIB
DIRECTORIES = 20


def run_baseline(port: int) -> None:
    """The bare route: ``tar`` as a subprocess, its stdout streamed out or the body piped in."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from agentbox_common.serving import serve

    async def export(request: Request) -> Response:
        root = request.query_params["path"]
        process = await asyncio.create_subprocess_exec(
            "tar", "-C", root, "-cf", "-", ".", stdout=asyncio.subprocess.PIPE
        )
        assert process.stdout is not None
        stdout = process.stdout

        async def body() -> AsyncIterator[bytes]:
            while chunk := await stdout.read(CHUNK):
                yield chunk
            await process.wait()

        return StreamingResponse(body(), media_type="application/x-tar")

    async def import_(request: Request) -> Response:
        root = request.query_params["path"]
        os.makedirs(root)
        process = await asyncio.create_subprocess_exec("tar", "-C", root, "-xf", "-", stdin=asyncio.subprocess.PIPE)
        assert process.stdin is not None
        async for chunk in request.stream():
            process.stdin.write(chunk)
            await process.stdin.drain()
        process.stdin.close()
        return JSONResponse({"returncode": await process.wait()})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [Route("/tree", export, methods=["GET"]), Route("/tree", import_, methods=["PUT"])]
    serve(Starlette(routes=[*routes, Route("/health", health)]), "127.0.0.1", port)


def make_tree(root: Path, total: int, files: int) -> None:
    size = total // files
    for number in range(files):
        folder = root / f"d{number % DIRECTORIES:02}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{number:05}.bin").write_bytes(os.urandom(size))


def landed(root: Path) -> tuple[int, int]:
    """``(files, bytes)`` under ``root``."""
    found = [path for path in root.rglob("*") if path.is_file()]
    return len(found), sum(path.stat().st_size for path in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=100, help="size of the tree")
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--passes", type=int, default=2)
    args = parse_or_serve(parser, run_baseline)
    if args is None:
        return

    scratch = Path(tempfile.mkdtemp(prefix="bench-v2-fs-"))
    try:
        tree = scratch / "tree"
        tree.mkdir()
        make_tree(tree, args.mib * MIB, args.files)
        expected = landed(tree)
        archive = subprocess.run(["tar", "-C", str(tree), "-cf", "-", "."], capture_output=True, check=True).stdout
        aiod = [os.path.join(BIN, "aiod"), "start"]
        baseline = [sys.executable, os.path.abspath(__file__), "--baseline-server"]
        with (
            listening(aiod) as (gateway, _),
            listening(baseline) as (bare, _),
            httpx.Client(timeout=300) as client,
        ):
            uploads = iter(range(1_000_000))

            def download(base: str, route: str) -> Callable[[], Path | None]:
                def call() -> Path | None:
                    received = 0
                    with client.stream("GET", f"{base}{route}", params={"path": str(tree)}) as response:
                        assert response.status_code == 200, response.read()
                        for chunk in response.iter_raw(CHUNK):
                            received += len(chunk)
                    assert received >= expected[1], received
                    return None

                return call

            def upload(base: str, route: str) -> Callable[[], Path | None]:
                def call() -> Path | None:
                    target = scratch / f"up-{next(uploads)}"
                    response = client.put(f"{base}{route}", params={"path": str(target)}, content=archive)
                    assert response.status_code == 200, response.text
                    return target

                return call

            directions = {
                "download": {
                    "GET /v2/fs/tree": download(gateway, "/v2/fs/tree"),
                    "bare route, tar -c (floor)": download(bare, "/tree"),
                },
                "upload": {
                    "PUT /v2/fs/tree": upload(gateway, "/v2/fs/tree"),
                    "bare route, tar -x (floor)": upload(bare, "/tree"),
                },
            }
            samples: dict[str, dict[str, list[float]]] = {
                way: {name: [] for name in calls} for way, calls in directions.items()
            }
            for number in range(args.passes + 1):  # the first pass warms caches, untimed
                for way, calls in directions.items():
                    for name, call in calls.items():
                        started = time.perf_counter()
                        target = call()
                        elapsed = time.perf_counter() - started
                        if target is not None:
                            assert landed(target) == expected, (name, landed(target), expected)
                            shutil.rmtree(target)
                        if number:
                            samples[way][name].append(elapsed)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    size = args.mib * MIB
    print(f"tar tree of {args.mib} MiB in {args.files} files, {os.cpu_count()} CPUs, loopback, contenders alternating")
    print(f"{'contender':<32} {'MiB/s (best)':>13} {'each pass (MiB/s)':>22}")
    for way, contenders in samples.items():
        print(way)
        rates = {name: [size / MIB / seconds for seconds in values] for name, values in contenders.items()}
        for name, values in rates.items():
            each = " / ".join(f"{value:.0f}" for value in values)
            print(f"  {name:<30} {max(values):>13.0f} {each:>22}")
        ours, floor = (max(values) for values in rates.values())
        verdict = "met" if ours >= floor / 2 else "MISSED"
        print(f"  target >= 0.5x the bare route: {verdict} (ratio {ours / floor:.2f})")


if __name__ == "__main__":
    main()
