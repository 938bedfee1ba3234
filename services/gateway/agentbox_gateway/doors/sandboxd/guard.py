"""The gateway's auth in front of sandboxd's two listeners, answered in sandboxd's terms.

With ``AIO_API_KEY`` set every call needs the key, as everywhere else in the gateway: REST in a
header (``Authorization: Bearer``, ``X-API-Key``), gRPC in the same metadata; only ``GET
/v1/health`` (the probes') is public. Without a key, a REST ``Host`` must be loopback, this
machine's own name or address, or listed in ``AIO_ALLOWED_HOSTS`` (a rebound web page cannot reach
the files), and with one only when that list is set. A browser's ``Origin`` is refused unless listed
in ``AIO_ALLOWED_ORIGINS``: no page of the gateway's calls these ports. gRPC needs no ``Host`` rule:
a browser cannot speak it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

import grpc
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import send_json
from agentbox_common.keys import key_matches

from ...auth.guards import header_key, host_allowed, origin_allowed, own_host_names

if TYPE_CHECKING:
    Handler = grpc.RpcMethodHandler[Any, Any]
PUBLIC_PATHS = frozenset({"/v1/health"})
UNAUTHENTICATED = "missing or invalid API key: send Authorization: Bearer <AIO_API_KEY>"


class RestGuard:
    def __init__(
        self, app: ASGIApp, *, api_key: str, allowed_hosts: Iterable[str], allowed_origins: Iterable[str]
    ) -> None:
        self.app = app
        self.api_key = api_key
        self.allowed_hosts = tuple(allowed_hosts)
        self.allowed_origins = tuple(allowed_origins)
        self.check_host = not api_key or bool(self.allowed_hosts)
        self.own_names = own_host_names()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host, origin = headers.get(b"host"), headers.get(b"origin")
        if self.check_host and host is not None:
            if not host_allowed(host.decode("latin-1"), self.allowed_hosts, self.own_names):
                body = {"code": "PERMISSION_DENIED", "message": "Host not allowed: list it in AIO_ALLOWED_HOSTS"}
                await send_json(send, 421, body)
                return
        if origin is not None and not origin_allowed(origin.decode("latin-1"), self.allowed_origins):
            await send_json(send, 403, {"code": "PERMISSION_DENIED", "message": "origin not allowed"})
            return
        if self.api_key and scope["path"] not in PUBLIC_PATHS:
            key = header_key(scope)
            if key is None or not key_matches(key, self.api_key):
                challenge = [(b"www-authenticate", b'Bearer realm="sandboxd"')]
                await send_json(send, 401, {"code": "UNAUTHENTICATED", "message": UNAUTHENTICATED}, challenge)
                return
        await self.app(scope, receive, send)


def _metadata_key(metadata: Iterable[tuple[str, str | bytes]]) -> str | None:
    values = {name.lower(): value for name, value in metadata}
    auth = values.get("authorization")
    if isinstance(auth, str) and auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    for name in ("x-api-key", "x-aio-api-key"):
        value = values.get(name)
        if isinstance(value, str):
            return value
    return None


class GrpcKeyGuard(grpc.aio.ServerInterceptor):
    """Answers ``UNAUTHENTICATED`` to a call without the key (the RPC's own handler never runs)."""

    def __init__(self, api_key: str, calls: Counter[tuple[str, str, str]]) -> None:
        self.api_key = api_key
        self.calls = calls

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        key = _metadata_key(handler_call_details.invocation_metadata or ())
        if handler is None or (key is not None and key_matches(key, self.api_key)):
            return handler
        self.calls["grpc", handler_call_details.method.rpartition("/")[2], "UNAUTHENTICATED"] += 1
        return _refusing(handler)


def _refusing(handler: Handler) -> Handler:
    """A handler of ``handler``'s shape that only refuses."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED)
        yield  # an async generator, as a server-streaming handler is

    options = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(refuse_stream, **options)
    return grpc.unary_unary_rpc_method_handler(refuse, **options)
