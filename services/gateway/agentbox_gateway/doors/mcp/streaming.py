"""Long tool calls on the MCP door: progress, cancellation and log messages.

The door answers in JSON (``json_response=True``: no SSE framing, no per-request stream on the hot
path). A ``tools/call`` whose ``_meta`` carries a ``progressToken`` goes instead to a second SDK
session manager of the same server that answers in SSE, so the tool's ``notifications/progress``
(new output in ``message``) ride that request's stream before its result; the SDK also cancels the
handler when such a stream is closed. ``notifications/cancelled`` arrives as its own POST (every
request has its own dispatcher when stateless), so the door keeps the running calls by request id
and cancels the one named. ``logging/setLevel`` sets the least level of the ``notifications/message``
tools send."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import replay_body
from agentbox_common.mcp_progress import progress_reporter

from ...planes.streaming import OutputSink

logger = logging.getLogger(__name__)


def output_sink(ctx: ServerRequestContext[Any, Any]) -> OutputSink | None:
    """Where a built-in sends its output as it is printed (its ``ToolContext.output``): a progress
    reporter when the call asked for progress, else ``None`` (nothing to pay, nothing streamed)."""
    return progress_reporter(ctx)


def progress_relay(ctx: ServerRequestContext[Any, Any]) -> Callable[[dict[str, Any]], Awaitable[None]] | None:
    """Passes an upstream's progress on to this call's client, as sent (``None``: none asked for)."""
    if progress_token_from_params(ctx.params) is None:
        return None

    async def relay(params: dict[str, Any]) -> None:
        progress, total, message = params.get("progress"), params.get("total"), params.get("message")
        if isinstance(progress, int | float) and not isinstance(progress, bool):
            await ctx.session.report_progress(
                progress,
                total if isinstance(total, int | float) else None,
                message if isinstance(message, str) else None,
            )

    return relay


class ProgressSplitter:
    """ASGI in front of the JSON endpoint: ``tools/call`` requests with a progress token (and an
    ``Accept`` that allows SSE) go to the SSE endpoint, everything else to the JSON one untouched.

    Only bodies up to ``max_body`` with a ``Content-Length`` are looked at; larger ones keep the
    JSON path (and its body limit)."""

    def __init__(self, json_endpoint: ASGIApp, sse_endpoint: ASGIApp, *, max_body: int) -> None:
        self.json_endpoint = json_endpoint
        self.sse_endpoint = sse_endpoint
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.json_endpoint(scope, receive, send)
            return
        request = Request(scope, receive)
        length = request.headers.get("content-length", "")
        if not length.isdigit() or int(length) > self.max_body or not check_accept_headers(request)[1]:
            await self.json_endpoint(scope, receive, send)
            return
        try:
            body = await request.body()
        except ClientDisconnect:
            return
        endpoint = self.sse_endpoint if _wants_progress(body) else self.json_endpoint
        await endpoint(scope, replay_body(body, receive), send)


def _wants_progress(body: bytes) -> bool:
    if b"progressToken" not in body:
        return False
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and progress_token_from_params(message.get("params") if isinstance(message.get("params"), dict) else None)
        is not None
    )


def sse_endpoint(server: Server, **transport: Any) -> tuple[ASGIApp, StreamableHTTPSessionManager]:
    """The server's second, SSE-answering endpoint (same transport settings as the JSON one), and
    its session manager, whose ``run()`` :func:`chain_lifespan` ties to the JSON manager's."""
    manager = StreamableHTTPSessionManager(app=server, json_response=False, stateless=True, **transport)
    return StreamableHTTPASGIApp(manager), manager


def chain_lifespan(server: Server, manager: StreamableHTTPSessionManager) -> Callable[[], Any]:
    """Run ``manager`` inside the server's lifespan, so the host app's one
    ``server.session_manager.run()`` starts both endpoints (the SDK enters the server lifespan
    once per manager: the inner entry, from ``manager`` itself, only passes the state through).
    Returns what reads the lifespan's state (for requests served outside both managers)."""
    inner: Callable[[Server], AbstractAsyncContextManager[Any]] = server.lifespan
    state: list[Any] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Server) -> AsyncIterator[Any]:
        if state:
            yield state[0]
            return
        async with inner(app) as value:
            state.append(value)
            try:
                async with manager.run():
                    yield value
            finally:
                state.clear()

    server.lifespan = lifespan
    return lambda: state[0] if state else None
