"""``GET /mcp``: the standing SSE stream on which handshake-era clients (the TypeScript SDK opens it
after ``initialize``) receive ``notifications/tools/list_changed``.

The door is stateless, so the stream belongs to no session: it carries the change notifications
every client should hear, from the same bus as 2026-07-28's ``subscriptions/listen`` streams (whose
open count keeps the list watcher polling). Nothing is replayed: a client that reconnects lists
again, as the spec's clients do after a dropped stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.streamable_http import check_accept_headers
from mcp.server.subscriptions import ServerEvent, SubscriptionBus
from mcp.shared.subscriptions import event_to_notification
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..rest.shell_stream import KEEPALIVE
from .edge import jsonrpc_http_error

#: Open GET streams at most (each holds a subscription and a connection).
MAX_STREAMS = 256
#: Notifications a slow reader may fall behind by before its stream is ended.
BACKLOG = 64


class ChangeStream:
    """ASGI in front of the ``/mcp`` endpoint: a ``GET`` is answered with the change stream,
    everything else goes on untouched."""

    def __init__(self, app: ASGIApp, bus: SubscriptionBus) -> None:
        self.app = app
        self.bus = bus
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        if not check_accept_headers(Request(scope, receive))[1]:
            refusal = jsonrpc_http_error("Not Acceptable: the GET stream is text/event-stream")
            await JSONResponse(refusal, status_code=406)(scope, receive, send)
            return
        if self.open >= MAX_STREAMS:
            refusal = jsonrpc_http_error(f"Too many open notification streams (at most {MAX_STREAMS})")
            await JSONResponse(refusal, status_code=503, headers={"Retry-After": "5"})(scope, receive, send)
            return
        self.open += 1
        # subscribed before the answer starts: a change right after the client sees 200 is not missed
        send_event, events = anyio.create_memory_object_stream[ServerEvent](BACKLOG)

        def deliver(event: ServerEvent) -> None:
            try:
                send_event.send_nowait(event)
            except anyio.WouldBlock:  # a reader this far behind lists again when it reconnects
                send_event.close()
            except anyio.ClosedResourceError:
                pass

        unsubscribe = self.bus.subscribe(deliver)
        try:
            response = EventSourceResponse(_messages(events), ping=KEEPALIVE, headers={"Cache-Control": "no-cache"})
            await response(scope, receive, send)
        finally:
            unsubscribe()
            send_event.close()
            self.open -= 1


async def _messages(events: MemoryObjectReceiveStream[ServerEvent]) -> AsyncIterator[ServerSentEvent]:
    async with events:
        async for event in events:
            yield ServerSentEvent(json.dumps(notification_message(event)), event="message")


def notification_message(event: ServerEvent) -> dict[str, Any]:
    """The JSON-RPC notification for ``event``, with no subscription id (the stream has none)."""
    notification = event_to_notification(event, {}).model_dump(by_alias=True, mode="json", exclude_none=True)
    params = notification.get("params") or {}
    if not params.get("_meta"):
        params.pop("_meta", None)
    if not params:
        notification.pop("params", None)
    return {"jsonrpc": "2.0", **notification}
