"""Real upstream MCP servers for the aggregation tests (this module holds helpers, no tests).

Every fake is a real HTTP server on a random loopback port: a low-level ``mcp`` Server publishing
raw tool definitions and raw results (so pass-through can be checked field by field), the SDK's
``MCPServer`` answering over SSE, a hand-written SSE answer, and raw sockets that never answer, drop
every request, or close a kept-alive connection as the next request arrives."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from mcp import types
from mcp.server import MCPServer, Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_gateway.doors.mcp.server import build_mcp_routes, build_mcp_server
from agentbox_gateway.doors.mcp.tools.registry import ToolRegistry, ToolSpec
from agentbox_gateway.doors.mcp.tools.results import text_result
from agentbox_gateway.settings import GatewaySettings
from agentbox_gateway.upstreams import UpstreamRouter
from tests.support.servers import serve_app

NO_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
CallHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def make_router(
    servers: dict[str, Any],
    *,
    list_timeout: float = 2.0,
    call_timeout: float = 10.0,
    list_cache_ttl: float = GatewaySettings.upstream_list_cache_ttl,
) -> UpstreamRouter:
    return UpstreamRouter.from_config(
        GatewaySettings(
            mcp_servers=servers,
            upstream_list_timeout=list_timeout,
            upstream_call_timeout=call_timeout,
            upstream_list_cache_ttl=list_cache_ttl,
        )
    )


def tool(name: str, **extra: Any) -> dict[str, Any]:
    """A raw tool definition as an upstream would send it."""
    return {"name": name, "description": f"the {name} tool", "inputSchema": {"type": "object"}, **extra}


class HeaderRecorder:
    """ASGI wrapper keeping the headers of every request the upstream receives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


def _mounted(server: Server | MCPServer, inner: Starlette) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return Starlette(routes=inner.routes, lifespan=lifespan)


def upstream_app(
    label: str,
    tools: list[dict[str, Any]],
    *,
    results: dict[str, dict[str, Any]] | None = None,
    handler: CallHandler | None = None,
    page_size: int = 0,
) -> Starlette:
    """A stateless JSON-answering upstream. A call returns ``results[name]`` verbatim, else what
    ``handler`` returns, else the text ``<label>:<name>:<arguments as sorted JSON>``."""

    async def on_list(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> dict[str, Any]:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size if page_size else len(tools)
        page: dict[str, Any] = {"tools": tools[start:end]}
        if end < len(tools):
            page["nextCursor"] = str(end)
        return page

    async def on_call(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> dict[str, Any]:
        arguments = params.arguments or {}
        if results and params.name in results:
            return results[params.name]
        if handler is not None:
            return await handler(params.name, arguments)
        if params.name not in {t["name"] for t in tools}:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        text = f"{label}:{params.name}:{json.dumps(arguments, sort_keys=True)}"
        return {"content": [{"type": "text", "text": text}]}

    server = Server(label, on_list_tools=on_list, on_call_tool=on_call)
    inner = server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True, transport_security=NO_HOST_CHECK
    )
    return _mounted(server, inner)


UPSTREAM_MAIN = """
import sys, uvicorn
from tests.gateway.upstreams.test_aggregation_fakes import tool, upstream_app
app = upstream_app(sys.argv[2], [tool(name) for name in sys.argv[3:]])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


@contextlib.contextmanager
def upstream_process(port: int, label: str, tools: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """:func:`upstream_app` in a process of its own (so a test can SIGKILL it); reaped after."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    process = subprocess.Popen([sys.executable, "-c", UPSTREAM_MAIN, str(port), label, *tools], cwd=root)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the upstream process did not start")
            time.sleep(0.05)
        yield process
    finally:
        process.kill()
        process.wait()


def sdk_sse_upstream() -> Starlette:
    """The official SDK's high-level server answering over SSE (``json_response=False``), stateless,
    with its default loopback Host/Origin protection on."""
    mcp = MCPServer("sse-upstream")

    @mcp.tool(description="Add two integers.")
    def sse_add(a: int, b: int) -> int:
        return a + b

    @mcp.tool(description="Echo a text.")
    def sse_echo(text: str) -> str:
        return f"echo: {text}"

    return _mounted(mcp, mcp.streamable_http_app(json_response=False, stateless_http=True))


def handwritten_sse_upstream(tools: list[dict[str, Any]]) -> Starlette:
    """An SSE answer with a comment, a notification and a response split over two ``data`` lines,
    streamed in pieces that end between CR and LF and inside a multi-byte character."""

    async def endpoint(request: Request) -> Response:
        message = await request.json()
        if message["method"] == "tools/list":
            result: dict[str, Any] = {"tools": tools}
        else:
            result = {"content": [{"type": "text", "text": "from sse ✓"}], "structuredContent": {"n": 1}}
        note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, indent=1, ensure_ascii=False)
        head, tail = answer.split("\n", 1)
        body = (
            ": keep-alive\n\n"
            f"event: message\ndata: {json.dumps(note)}\n\n"
            f"event: message\r\nid: 7\r\ndata: {head}\r\ndata: {tail.replace(chr(10), ' ')}\r\n\r\n"
        ).encode()
        check_mark = body.find("✓".encode())
        cuts = sorted({i + 1 for i, byte in enumerate(body) if byte == ord("\r")} | {check_mark + 1} - {0})
        pieces = [body[start:end] for start, end in itertools.pairwise([0, *cuts, len(body)])]

        async def stream() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece
                await asyncio.sleep(0.005)  # each piece its own read on the other side

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])


@contextlib.asynccontextmanager
async def hanging_upstream() -> AsyncIterator[str]:
    """A raw socket server in the running loop that accepts, reads and never answers."""
    writers: set[asyncio.StreamWriter] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        with contextlib.suppress(ConnectionError):
            while await reader.read(65536):
                pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def raw_upstream(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[str]:
    """A raw socket server in the running loop, one ``handle`` per connection; yields its /mcp URL."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    finally:
        server.close()
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The JSON body of the next HTTP/1.1 request on the connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    return json.loads(await reader.readexactly(length))


def crashing_upstream(requests: list[dict[str, Any]]) -> contextlib.AbstractAsyncContextManager[str]:
    """Reads each request (into ``requests``) and drops the connection, as a dying process does."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            requests.append(await read_request(reader))
        writer.close()

    return raw_upstream(handle)


def once_per_connection_upstream(answered: list[dict[str, Any]]) -> contextlib.AbstractAsyncContextManager[str]:
    """Answers the first request on each kept-alive connection (recorded in ``answered``) and closes
    the connection on the second without answering: an idle timeout racing the client's next use."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            request = await read_request(reader)
            answered.append(request)
            text = f"call {len(answered)}"
            body = json.dumps(
                {"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": text}]}}
            ).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            await reader.readuntil(b"\r\n\r\n")
        writer.close()

    return raw_upstream(handle)


async def _builtin_echo(args: dict[str, Any]) -> types.CallToolResult:
    return text_result(f"builtin:{args.get('text', '')}")


def builtin(name: str) -> ToolSpec:
    return ToolSpec(
        name, f"built-in {name}", {"type": "object", "properties": {"text": {"type": "string"}}}, _builtin_echo
    )


@contextlib.contextmanager
def door(router: UpstreamRouter, builtins: list[str], *, forwarder: bool = True) -> Iterator[str]:
    """The gateway's real MCP door (fake built-ins + ``router``) served on loopback; yields /mcp.
    ``forwarder=False`` leaves out the tool-call fast path, so every call takes the SDK's way."""
    server = build_mcp_server(ToolRegistry([builtin(name) for name in builtins]), router)
    routes = build_mcp_routes(server, "127.0.0.1", upstreams=router, builtins=frozenset(builtins), fast_path=forwarder)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            try:
                yield
            finally:
                await router.aclose()

    with serve_app(Starlette(routes=routes, lifespan=lifespan)) as url:
        yield f"{url}/mcp"
