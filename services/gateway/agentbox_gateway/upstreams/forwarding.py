"""The hot path for calls to upstream tools: a ``tools/call`` for a tool an upstream owns goes from
the HTTP request straight to the upstream, without an SDK session around it.

For every request the SDK's stateless handshake-era path builds a transport, memory streams and a
dispatcher task (about 0.6 ms here, 0.35 ms on the 2026-07-28 path), which is most of what the
gateway would add to a call it only relays. The forwarder runs the checks the SDK runs, with the
SDK's own functions (``mcp.shared.inbound`` for the 2026-07-28 header and ``_meta`` rules,
``mcp_types.methods`` for the request and the result), and shapes the upstream's result for the
client's protocol version as the SDK's runner does, so the answer is the one the door would give
(``tests/gateway/test_aggregation_forwarding.py`` compares the two). Every request it would have
to refuse goes to the door untouched, so every error answer stays the SDK's: other methods,
built-in and unknown tools, notifications, batches, malformed envelopes, header mismatches; so do
bodies over 64 KiB, which would cost more to parse twice than the door costs."""

from __future__ import annotations

import json
import time
from collections.abc import Container, Mapping
from typing import Any

from mcp.server.streamable_http import check_accept_headers
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
    validate_mcp_param_headers,
)
from mcp.types import INTERNAL_ERROR
from mcp_types import CORE_RESULT_TYPES, DEFAULT_NEGOTIATED_VERSION, SERVER_INFO_META_KEY
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import replay_body
from agentbox_common.mcp_progress import RunningCalls, cancelled_result
from agentbox_common.observability import ToolOutcome, note_tool_call

from .client import UpstreamRpcError
from .router import Route, UpstreamRouter

#: Larger requests go to the door: reading and parsing such a body twice costs more than the door.
MAX_FORWARDED_BODY = 64 * 1024
_PARAM_HEADER_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
#: What the SDK answers when a result cannot be shaped for the client's protocol version.
_UNSHAPEABLE = {"code": INTERNAL_ERROR, "message": "Handler returned an invalid result"}


class UpstreamCallForwarder:
    """ASGI wrapper around the MCP door's endpoint (``/mcp``)."""

    def __init__(self, door: ASGIApp, router: UpstreamRouter, *, builtins: Container[str],
                 server_info: Mapping[str, Any], max_body: int = MAX_FORWARDED_BODY,
                 running: RunningCalls | None = None) -> None:
        self.door = door
        #: Where forwarded calls are kept for the door's ``notifications/cancelled`` handler.
        self.running = running if running is not None else RunningCalls()
        self.router = router
        self.builtins = builtins
        #: Stamped into 2026-07-28 results that carry none, as the SDK stamps the door's own.
        self.server_info = dict(server_info)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        version = self._version(request)
        if version is None:
            await self.door(scope, receive, send)
            return
        try:
            body = await request.body()
        except ClientDisconnect:
            return
        forwarded = self._forwardable(body, version, request.headers)
        if forwarded is None:
            await self.door(scope, replay_body(body, receive), send)
            return
        request_id, name, route, arguments = forwarded
        started = time.perf_counter()
        with self.running.track(request_id) as cancel:
            status, answer = await self._answer(route, arguments, version)
        if cancel.cancelled_caught:  # the upstream's request was cancelled with it
            status, answer = 200, self._result(cancelled_result().model_dump(by_alias=True, exclude_none=True,
                                                                             mode="json"), version)
        note_tool_call(name, _outcome(answer), time.perf_counter() - started)
        content = json.dumps({"jsonrpc": "2.0", "id": request_id, **answer}, ensure_ascii=False,
                             separators=(",", ":"))
        await Response(content, status_code=status, media_type="application/json")(scope, receive, send)

    def _version(self, request: Request) -> str | None:
        """The request's protocol version when only its body can stop it from being forwarded."""
        headers = request.headers
        if request.method != "POST":
            return None
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return None
        if not check_accept_headers(request)[0]:
            return None
        length = headers.get("content-length", "")
        if not length.isdigit() or int(length) > self.max_body:
            return None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        return version if version in HANDSHAKE_PROTOCOL_VERSIONS or version in MODERN_PROTOCOL_VERSIONS else None

    def _forwardable(
        self, body: bytes, version: str, headers: Headers
    ) -> tuple[int | str, str, Route, dict[str, Any] | None] | None:
        """``(id, name, route, arguments)`` of a valid ``tools/call`` for an upstream tool, else ``None``."""
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
        if not isinstance(name, str) or name in self.builtins:
            return None
        try:
            validate_client_request("tools/call", version, params)
        except ValidationError:
            return None
        arguments = params.get("arguments")
        if version in MODERN_PROTOCOL_VERSIONS and not self._modern_rules_hold(message, name, arguments, headers):
            return None
        route = self.router.route(name)
        return (request_id, name, route, arguments) if route is not None else None

    def _modern_rules_hold(self, message: dict[str, Any], name: str, arguments: dict[str, Any] | None,
                           headers: Headers) -> bool:
        """The 2026-07-28 checks of the SDK's modern handler: routing headers given once and equal to
        the body, the ``_meta`` envelope, and ``Mcp-Param-*`` headers against the tool's schema."""
        if find_duplicated_routing_header(headers.items()) is not None:
            return False
        if not isinstance(classify_inbound_request(message, headers=dict(headers)), InboundModernRoute):
            return False
        if not arguments and not any(key.startswith(_PARAM_HEADER_PREFIX) for key in headers):
            return True
        schema = self.router.input_schema(name)
        return schema is None or validate_mcp_param_headers(schema, arguments or {}, headers) is None

    async def _answer(self, route: Route, arguments: dict[str, Any] | None, version: str) -> tuple[int, dict[str, Any]]:
        """The HTTP status and the JSON-RPC ``result`` or ``error`` member, as the door sends them."""
        modern = version in MODERN_PROTOCOL_VERSIONS
        try:
            result = await self.router.forward(route, arguments)
        except UpstreamRpcError as exc:
            error = exc.error_data()
            return (ERROR_CODE_HTTP_STATUS.get(error["code"], 200) if modern else 200), {"error": error}
        return 200, self._result(result, version)

    def _result(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        """The ``result`` member for ``result`` shaped for the client's version (or the SDK's error)."""
        try:
            return {"result": self._shape_modern(result, version) if version in MODERN_PROTOCOL_VERSIONS
                    else serialize_server_result("tools/call", version, result)}
        except ValidationError:
            return {"error": dict(_UNSHAPEABLE)}

    def _shape_modern(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        """A 2026-07-28 result: ``resultType`` added, core shapes sieved for the version, and the
        gateway's ``serverInfo`` stamped into ``_meta`` unless the upstream set one."""
        shaped = {"resultType": "complete", **result}
        result_type = shaped["resultType"]
        if not isinstance(result_type, str) or result_type in CORE_RESULT_TYPES:
            shaped = serialize_server_result("tools/call", version, shaped)
        if shaped.get("resultType") is None:
            shaped["resultType"] = "complete"
        meta = shaped.get("_meta")
        if meta is None:
            shaped["_meta"] = {SERVER_INFO_META_KEY: self.server_info}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            shaped["_meta"] = {**meta, SERVER_INFO_META_KEY: self.server_info}
        return shaped


def _outcome(answer: dict[str, Any]) -> ToolOutcome:
    if "error" in answer:
        return ToolOutcome.JSONRPC_ERROR
    return ToolOutcome.IS_ERROR if answer["result"].get("isError") else ToolOutcome.OK
