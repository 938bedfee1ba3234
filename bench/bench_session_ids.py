"""What MCP mode's :class:`~agentbox_mcp_mode.mcp_server.SessionIds` (issue 28: a handshake client's
log level is its own) adds to a request: the ASGI wrapper alone, in process, in front of an app
that reads the body and answers, beside the same app without it (main), calls interleaved.

Three requests: a 2026-07-28 ``tools/call`` (it carries ``MCP-Protocol-Version``: passed unread), a
one-shot handshake-era ``tools/call`` without headers (read, then replayed) and a 60 KiB
``write_file`` of the same kind.

    .venv/bin/python bench/bench_session_ids.py [--calls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from starlette.types import Message, Receive, Scope, Send

from agentbox_mcp_mode.mcp_server import SessionIds

App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def answer(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the whole body, as the SDK's transport does, and answers 200."""
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def request(arguments: dict[str, object], headers: list[tuple[bytes, bytes]]) -> tuple[Scope, bytes]:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": arguments}}
    ).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
    }
    return scope, body


async def once(app: App, scope: Scope, body: bytes) -> float:
    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        return None

    started = time.perf_counter()
    await app(scope, receive, send)
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    cases = {
        "2026-07-28 tools/call": request({"path": "a.txt"}, [(b"mcp-protocol-version", b"2026-07-28")]),
        "one-shot tools/call, no headers": request({"path": "a.txt"}, []),
        "one-shot write_file 60 KiB": request({"path": "a.txt", "content": "x" * 60_000}, []),
    }
    apps: dict[str, App] = {"main (no wrapper)": answer, "SessionIds": SessionIds(answer)}
    print(f"{'request':34} {'app':20} {'p50 us':>8} {'mean us':>8}")
    for name, (scope, body) in cases.items():
        times: dict[str, list[float]] = {label: [] for label in apps}
        for _ in range(args.calls):
            for label, app in apps.items():
                times[label].append(await once(app, scope, body))
        for label, found in times.items():
            print(f"{name:34} {label:20} {statistics.median(found) * 1e6:8.1f} {statistics.fmean(found) * 1e6:8.1f}")


if __name__ == "__main__":
    asyncio.run(main())
