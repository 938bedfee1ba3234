"""The hot path of ``/mcp``: a valid ``tools/call`` goes from the HTTP request straight to whoever
runs the tool, without the SDK's per-request transport.

For every request the SDK's stateless handshake-era path builds a transport, memory streams and a
dispatcher task (about 0.6 ms here, 0.35 ms on the 2026-07-28 path), most of what the gateway adds
to a call. The fast path runs the checks the SDK runs, with the SDK's own functions
(``mcp.shared.inbound`` for the 2026-07-28 header and ``_meta`` rules, ``mcp_types.methods`` for the
request), then hands the call to the first :class:`FastCalls` that owns the name: the built-in tools
(:class:`BuiltinCalls`, the SDK's own request kernel ``serve_one``) or the upstream forwarder
(``forwarding``). Every request it would have to refuse goes to the door untouched, so
every refusal stays the SDK's: other methods, unknown tools, notifications, batches, malformed
envelopes or params, header mismatches; so do bodies without a ``Content-Length`` or over the
door's own limit, and calls with a progress token from a client that accepts SSE (the door's
``streaming`` splitter answers those over SSE). Large calls take the fast path too (a 1 MiB file
written over MCP is parsed once, not once here and again by the SDK); only a large request the fast
path has to refuse, which is rare, is parsed twice.
``tests/gateway/doors/mcp/test_mcp_fast_path.py`` compares its answers with the door's, byte for byte."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import modern_error_data, serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, ErrorData, JSONRPCError, JSONRPCResponse, RequestId
from mcp_types.methods import validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import replay_body
from agentbox_common.mcp_tasks import declares_tasks

logger = logging.getLogger(__name__)

_PARAM_HEADER_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()


@dataclass(frozen=True)
class ToolCall:
    """A ``tools/call`` request the SDK would accept, as the fast path read it."""

    request_id: int | str
    name: str
    params: dict[str, Any]
    version: str
    #: The 2026-07-28 envelope (``None`` on the handshake-era path).
    verdict: InboundModernRoute | None = None

    @property
    def modern(self) -> bool:
        return self.verdict is not None

    @property
    def arguments(self) -> dict[str, Any] | None:
        return self.params.get("arguments")


class FastCalls(Protocol):
    """Who can answer some tool calls without the door."""

    def owns(self, name: str) -> bool: ...

    def input_schema(self, name: str) -> Mapping[str, Any] | None: ...

    async def answer(self, call: ToolCall, request: Request) -> tuple[int, str]:
        """The HTTP status and the JSON-RPC answer's body, as the door would send them."""
        ...


class ToolCallFastPath:
    """ASGI wrapper around the MCP door's endpoint (``/mcp``)."""

    def __init__(self, door: ASGIApp, handlers: Sequence[FastCalls], *, max_body: int) -> None:
        """``max_body``: the door's own limit; a larger body goes to the door, which refuses it."""
        self.door = door
        self.handlers = list(handlers)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        accepts_json, accepts_sse = check_accept_headers(request)
        version = self._version(request) if accepts_json else None
        if version is None:
            await self.door(scope, receive, send)
            return
        try:
            body = await request.body()
        except ClientDisconnect:
            return
        claimed = self._claim(body, version, request.headers, sse=accepts_sse)
        if claimed is None:
            await self.door(scope, replay_body(body, receive), send)
            return
        handler, call = claimed
        status, content = await handler.answer(call, request)
        await Response(content, status_code=status, media_type="application/json")(scope, receive, send)

    def _version(self, request: Request) -> str | None:
        """The request's protocol version when only its body (or its ``Accept``, checked by the
        caller) can stop it from taking the fast path."""
        headers = request.headers
        if request.method != "POST":
            return None
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return None
        length = headers.get("content-length", "")
        if not length.isdigit() or int(length) > self.max_body:
            return None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        return version if version in HANDSHAKE_PROTOCOL_VERSIONS or version in MODERN_PROTOCOL_VERSIONS else None

    def _claim(self, body: bytes, version: str, headers: Headers, *, sse: bool) -> tuple[FastCalls, ToolCall] | None:
        """The handler and the call of a valid ``tools/call`` for a tool a handler owns, else ``None``
        (also for a call asking for progress when the client accepts SSE, ``sse``)."""
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
            return None
        request_id, params = message.get("id"), message.get("params")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str) or not isinstance(params, dict):
            return None
        name = params.get("name")
        if not isinstance(name, str) or (sse and progress_token_from_params(params) is not None):
            return None
        if declares_tasks(params) or "task" in params:  # the call may become a task: the SDK's way (mcp_tasks)
            return None
        handler = next((handler for handler in self.handlers if handler.owns(name)), None)
        if handler is None:
            return None
        try:
            validate_client_request("tools/call", version, params)
        except ValidationError:
            return None
        verdict = None
        if version in MODERN_PROTOCOL_VERSIONS:
            verdict = self._modern_verdict(message, handler.input_schema(name), params.get("arguments"), headers)
            if verdict is None:
                return None
        return handler, ToolCall(request_id, name, params, version, verdict)

    @staticmethod
    def _modern_verdict(
        message: dict[str, Any], schema: Mapping[str, Any] | None, arguments: dict[str, Any] | None, headers: Headers
    ) -> InboundModernRoute | None:
        """The 2026-07-28 checks of the SDK's modern handler: routing headers given once and equal to
        the body, the ``_meta`` envelope, and ``Mcp-Param-*`` headers against the tool's schema."""
        if find_duplicated_routing_header(headers.items()) is not None:
            return None
        verdict = classify_inbound_request(message, headers=dict(headers))
        if not isinstance(verdict, InboundModernRoute):
            return None
        if not arguments and not any(key.startswith(_PARAM_HEADER_PREFIX) for key in headers):
            return verdict
        if schema is None or validate_mcp_param_headers(schema, arguments or {}, headers) is None:
            return verdict
        return None


@dataclass
class _OneRequest:
    """The SDK's ``DispatchContext`` for one JSON-answered request: no back-channel (a JSON answer
    has no room for server requests or notifications, which the SDK drops there too)."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    can_send_request: bool = False

    @functools.cached_property
    def cancel_requested(self) -> anyio.Event:
        """Made when a handler first asks (an anyio ``Event`` costs some 3 µs; none of ours asks:
        ``notifications/cancelled`` goes through ``RunningCalls``)."""
        return anyio.Event()

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


class BuiltinCalls:
    """Built-in tool calls run through the SDK's request kernel (``serve_one``: params validation,
    the door's own ``tools/call`` handler and middleware, result shaping) and answered as the
    SDK's transports serialise them: the handshake-era JSON transport with ``model_dump_json``, the
    2026-07-28 entry with ``json.dumps`` of ``model_dump`` and its error-code HTTP statuses."""

    def __init__(self, server: Server, names: frozenset[str], lifespan_state: Callable[[], Any]) -> None:
        self.server = server
        self.names = names
        self.lifespan_state = lifespan_state

    def owns(self, name: str) -> bool:
        return name in self.names

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        lookup = self.server.get_tool_input_schema
        return lookup(name) if lookup is not None else None

    async def answer(self, call: ToolCall, request: Request) -> tuple[int, str]:
        verdict = call.verdict
        if verdict is not None:
            connection = Connection.from_envelope(
                verdict.protocol_version, verdict.client_info, verdict.client_capabilities
            )
            transport = TransportContext(kind="streamable-http", can_send_request=False, headers=request.headers)
        else:
            connection = Connection.from_envelope(call.version, None, None)
            transport = TransportContext(kind="streamable-http", can_send_request=False)
        context = _OneRequest(transport, call.request_id, ServerMessageMetadata(request_context=request))
        try:
            result = await serve_one(
                self.server,
                context,
                "tools/call",
                call.params,
                connection=connection,
                lifespan_state=self.lifespan_state(),
            )
        except Exception as exc:
            error = modern_error_data(exc) if call.modern else _handshake_error_data(exc)
            return _serialise(JSONRPCError(jsonrpc="2.0", id=call.request_id, error=error), call.modern)
        return _serialise(JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=result), call.modern)


def _handshake_error_data(exc: Exception) -> ErrorData:
    """The handshake-era dispatcher's mapping (its catch-all pins ``code=0``)."""
    error = handler_exception_to_error_data(exc)
    if error is None:
        logger.exception("handler for 'tools/call' raised")
        error = ErrorData(code=0, message=str(exc))
    return error


def _serialise(message: JSONRPCResponse | JSONRPCError, modern: bool) -> tuple[int, str]:
    if not modern:
        return 200, message.model_dump_json(by_alias=True, exclude_unset=True)
    status = ERROR_CODE_HTTP_STATUS.get(message.error.code, 200) if isinstance(message, JSONRPCError) else 200
    return status, json.dumps(message.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
