"""uvicorn's protocols with the bounds it lacks: a time limit on reading a request's headers, a limit
on pauses while reading its body, and a cap on open connections that evicts idle ones first.

uvicorn only times out idle keep-alive connections; a client that opens a connection and sends
nothing, or half a request, or a body byte a minute, holds a socket (and a file descriptor) for as
long as it likes, so a few thousand such clients lock everyone out. Here:

- the headers must be complete within ``header_timeout`` seconds of the connection opening (or of
  the first byte of a kept-alive connection's next request), else 408 and close;
- while a body is read, at most ``body_timeout`` seconds may pass without a byte (time the app
  itself takes to read is not counted), else the connection is closed and the app sees a disconnect;
- at most ``max_connections`` are open: a new one evicts the connection that has waited longest
  for a request's headers, so slow clients cannot keep a good one out; when none is waiting
  (every connection is busy), the newcomer gets 503.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


def _closing_response(status: str, text: str) -> bytes:
    body = text.encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode() + body


_TIMEOUT_RESPONSE = _closing_response("408 Request Timeout", "Request headers not received in time")
_FULL_RESPONSE = _closing_response("503 Service Unavailable", "Too many open connections")


def default_max_connections() -> int:
    """Half the file-descriptor limit (a relayed connection costs a second descriptor), 64..4096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(64, min(4096, soft // 2))


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 1024


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of :class:`ConnectionLimits` (``limits``, set on
    a subclass by :func:`bounded_protocols`)."""

    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        #: Since when this connection waits for a request's headers (None while one is handled).
        self.waiting_since: float | None = None

    # -- connection ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()
        if len(self.connections) > self.limits.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def _make_room(self) -> None:
        waiting = [
            c
            for c in self.connections
            if isinstance(c, BoundedHttpToolsProtocol) and c is not self and c.waiting_since is not None
        ]
        if waiting:
            oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
            oldest._cancel_timers()
            oldest.transport.close()
            return
        self.logger.warning("Too many open connections (%d): refusing a new one", len(self.connections))
        self._cancel_timers()
        self.transport.write(_FULL_RESPONSE)
        self.transport.close()

    # -- timers ----------------------------------------------------------------------------------

    def _await_headers(self) -> None:
        self.waiting_since = self.loop.time()
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.limits.header_timeout, self._headers_too_slow)

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.write(_TIMEOUT_RESPONSE)
            self.transport.close()

    def _arm_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
        self._body_timer = self.loop.call_later(self.limits.body_timeout, self._body_too_slow)

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.flow is not None and self.flow.read_paused:  # the app has not read what came: not the client's fault
            self._arm_body_timer()
        elif not self.transport.is_closing():
            self.logger.info("Request body stalled for %gs: closing the connection", self.limits.body_timeout)
            self.transport.close()

    # -- parser callbacks ------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_headers()  # a kept-alive connection's next request: its headers are timed too

    def on_headers_complete(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self.waiting_since = None
        upgrade = self.parser.should_upgrade()
        super().on_headers_complete()
        if not upgrade:
            self._arm_body_timer()

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        self._arm_body_timer()

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self.waiting_since = self.loop.time()  # idle between requests: first to go when full


class RefusingWebSocketsProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, which logs "ASGI callable returned without completing
    handshake" at ERROR after an app refused a handshake with an HTTP answer (the
    ``websocket.http.response`` extension, how the guards answer 401/403/421): such an answer
    completes the handshake."""

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True


def bounded_protocols(limits: ConnectionLimits) -> tuple[type[HttpToolsProtocol], type[WebSocketsSansIOProtocol]]:
    """The ``http=`` and ``ws=`` classes to give ``uvicorn.Config``, bound to ``limits``."""
    http = type("BoundedHttpProtocol", (BoundedHttpToolsProtocol,), {"limits": limits})
    return http, RefusingWebSocketsProtocol
