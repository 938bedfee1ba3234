"""The inbound preview relay (a caller to an app in the sandbox; the browser's outbound proxy is
``planes/egress``): ``/proxy/{port}/{path}`` (the app sees ``/{path}``) and
``/absproxy/{port}/{path}`` (the app sees the whole path), for every method and for WebSockets, over
the preview plane.

A raw ASGI app rather than a Starlette endpoint, so that bodies pass message by message in both
directions: a request body is handed to the app as it is received, a response body is sent on as
each piece arrives (server-sent events, chunked answers), and a caller that goes away stops the
transfer. The guards of ``app.py`` (origin, API key) run before this, as for every route.

On the gateway's origin every answer carries ``Content-Security-Policy: sandbox`` (without
``allow-same-origin``): a page the app serves there must not act with the person's credentials. The
same door serves the preview origins (see :mod:`.preview_host`), where the app has its own origin."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Message, Receive, Scope, Send

from agentbox_common.asgi import send_json
from agentbox_common.errors import ErrorKind

from ...planes.preview import SANDBOX_POLICY, Caller, PreviewError, PreviewPlane, Target, parse_port, request_headers
from ...settings import GatewaySettings
from ..shared.addresses import gateway_base, public_address

logger = logging.getLogger(__name__)

#: Where previewed apps are served on the gateway's origin (their answers' headers are the apps').
MOUNTS = ("/proxy/", "/absproxy/")
#: Close codes an ASGI server may send; others (1005 "none", 1006 "abnormal") become 1000.
_CLOSE_CODES = range(1000, 5000)
_RESERVED_CLOSE = frozenset({1004, 1005, 1006, 1015})
#: The preview door's answer to each kind of preview error. Unlike ``/v1/*`` (where 503 means the
#: gateway's own plane is down), an app that is not there or broke off is a bad gateway: 502.
_HTTP_STATUS = {ErrorKind.INVALID: 400, ErrorKind.UNAVAILABLE: 502, ErrorKind.TIMEOUT: 504}


class _CallerGone(Exception):
    """The caller disconnected while its request body was being passed on."""


def _envelope(message: str) -> dict[str, object]:
    return {"success": False, "message": message, "data": None, "hint": None}


class PreviewDoor:
    """One of the two mounts: ``absolute`` keeps the whole path, otherwise ``/proxy/{port}`` is cut;
    ``sandboxed`` (the gateway's origin) adds the sandbox policy to every answer."""

    def __init__(self, plane: PreviewPlane, settings: GatewaySettings, absolute: bool, sandboxed: bool = True) -> None:
        self.plane = plane
        self.absolute = absolute
        self.sandboxed = sandboxed
        self.own_port = settings.port
        self.fallback_host = gateway_base(settings).split("://", 1)[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            target, caller = self._target(scope)
        except PreviewError as exc:
            await self._refuse(scope, send, exc)
            return
        if target is None:  # /proxy/3000 -> /proxy/3000/, so that relative links resolve under it
            location = f"{caller.prefix}/proxy/{scope['path_params']['port']}/"
            query = scope.get("query_string", b"")
            location += f"?{query.decode('latin-1')}" if query else ""
            await send_json(send, 307, _envelope("Moved"), [(b"location", location.encode("latin-1"))])
            return
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send, target, caller)
        else:
            await self._http(scope, receive, send, target, caller)

    def _target(self, scope: Scope) -> tuple[Target | None, Caller]:
        server = scope.get("server")
        own = {self.own_port, server[1]} if server else {self.own_port}
        port = parse_port(scope["path_params"]["port"], own)
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        proto, host, prefix = public_address(Headers(scope=scope), scheme, self.fallback_host)
        client = scope.get("client")
        caller = Caller(proto, host, prefix, client[0] if client else None)
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        if self.absolute:
            return Target(port, raw_path, query, ""), caller
        pieces = raw_path.split(b"/", 3)  # b"", b"proxy", b"<port>", b"<rest>"
        if len(pieces) < 4:
            return None, caller
        return Target(port, b"/" + pieces[3], query, f"/proxy/{port}"), caller

    async def _refuse(self, scope: Scope, send: Send, error: PreviewError) -> None:
        body = _envelope(str(error))
        if scope["type"] != "websocket":
            await send_json(send, _HTTP_STATUS[error.kind], body)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await send_json(_as_denial(send), _HTTP_STATUS[error.kind], body)
        else:
            await send({"type": "websocket.close", "code": 1011, "reason": str(error)[:120]})

    async def _http(self, scope: Scope, receive: Receive, send: Send, target: Target, caller: Caller) -> None:
        import aiohttp  # here: a gateway nobody previews through never loads it

        headers = Headers(scope=scope)
        has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
        body_read = not has_body

        async def body() -> AsyncIterator[bytes]:
            nonlocal body_read
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _CallerGone
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body", False):
                    body_read = True
                    return

        forwarded = request_headers(scope["headers"], caller, target, self.plane.key, self.plane.own_cookies)
        try:
            answer = await self.plane.open(
                scope["method"], target, forwarded, body if has_body else None, caller.prefix
            )
        except PreviewError as exc:
            await send_json(send, _HTTP_STATUS[exc.kind], _envelope(str(exc)))
            return
        except _CallerGone:
            return
        answer_headers = answer.headers
        if self.sandboxed:
            answer_headers = [*answer_headers, (b"content-security-policy", SANDBOX_POLICY)]
        try:
            await send({"type": "http.response.start", "status": answer.status, "headers": answer_headers})
            if answer.arrived or not body_read:  # nothing left to wait for, or receive() still feeds the body
                await _send_body(answer.body, send)
                return
            gone = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(_watch_for_disconnect, receive, gone, group.cancel_scope)
                await _send_body(answer.body, send, gone)
                group.cancel_scope.cancel()
        except (aiohttp.ClientError, OSError) as exc:
            # Headers are out: the caller sees a cut-off answer (the server closes the connection).
            logger.warning("preview of port %s broke off: %s: %s", target.port, type(exc).__name__, exc)
        finally:
            answer.release()

    async def _socket(self, scope: Scope, receive: Receive, send: Send, target: Target, caller: Caller) -> None:
        import aiohttp

        if (await receive())["type"] != "websocket.connect":
            return
        forwarded = request_headers(
            scope["headers"], caller, target, self.plane.key, self.plane.own_cookies, websocket=True
        )
        try:
            upstream = await self.plane.connect_socket(target, forwarded, list(scope.get("subprotocols", [])))
        except PreviewError as exc:
            await self._refuse(scope, send, exc)
            return
        await send({"type": "websocket.accept", "subprotocol": upstream.protocol})
        try:
            async with anyio.create_task_group() as group:

                async def to_app() -> None:
                    while True:
                        message = await receive()
                        if message["type"] == "websocket.disconnect":
                            break
                        if message.get("text") is not None:
                            await upstream.send_str(message["text"])
                        else:
                            await upstream.send_bytes(message.get("bytes") or b"")
                    group.cancel_scope.cancel()

                async def to_caller() -> None:
                    async for message in upstream:
                        if message.type == aiohttp.WSMsgType.TEXT:
                            await send({"type": "websocket.send", "text": message.data})
                        elif message.type == aiohttp.WSMsgType.BINARY:
                            await send({"type": "websocket.send", "bytes": message.data})
                    code = upstream.close_code or 1000
                    if code not in _CLOSE_CODES or code in _RESERVED_CLOSE:
                        code = 1000
                    with contextlib.suppress(OSError, RuntimeError):
                        await send({"type": "websocket.close", "code": code})
                    group.cancel_scope.cancel()

                group.start_soon(to_app)
                group.start_soon(to_caller)
        except (aiohttp.ClientError, OSError, RuntimeError) as exc:
            logger.info("preview WebSocket on port %s ended: %s: %s", target.port, type(exc).__name__, exc)
        finally:
            with anyio.CancelScope(shield=True):
                await upstream.close()


async def _send_body(body: AsyncIterator[bytes], send: Send, gone: anyio.Event | None = None) -> None:
    """Pass the body on, piece by piece, until it ends or the caller is ``gone``. The check is needed
    beside the cancellation: anyio delivers a cancellation only while a task waits, and an app that
    sends faster than we pass on keeps the body's iterator from ever waiting (once the caller has
    gone, ``send`` returns at once), which would pull the whole body from the app into nowhere."""
    async for chunk in body:
        if gone is not None and gone.is_set():
            return
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _watch_for_disconnect(receive: Receive, gone: anyio.Event, scope: anyio.CancelScope) -> None:
    """Stop streaming an answer once the caller has gone (the server then drops what is sent)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    gone.set()
    scope.cancel()


def _as_denial(send: Send) -> Send:
    """An HTTP answer sent as the WebSocket denial response (ASGI ``websocket.http.response``)."""

    async def denial(message: Message) -> None:
        await send({**message, "type": f"websocket.{message['type']}"})

    return denial


def routes(plane: PreviewPlane, settings: GatewaySettings) -> list[BaseRoute]:
    """The ``/proxy/`` and ``/absproxy/`` routes (HTTP, any method, and WebSocket)."""
    stripped = PreviewDoor(plane, settings, absolute=False)
    absolute = PreviewDoor(plane, settings, absolute=True)
    paths = [
        ("/proxy/{port}", stripped),
        ("/proxy/{port}/{path:path}", stripped),
        ("/absproxy/{port}", absolute),
        ("/absproxy/{port}/{path:path}", absolute),
    ]
    return [
        *(Route(path, door) for path, door in paths),
        *(WebSocketRoute(path, door) for path, door in paths),
    ]
