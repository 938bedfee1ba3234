"""Calls to upstream tools on ``/mcp``'s fast path (``fast_path``): a ``tools/call`` for a
tool an upstream owns goes from the HTTP request straight to the upstream, without an SDK session
around it. The upstream's result is shaped for the client's protocol version as the SDK's runner
does, so the answer is the one the door would give (``tests/gateway/doors/mcp/test_aggregation_forwarding.py``
compares the two)."""

from __future__ import annotations

import json
import time
from collections.abc import Container, Mapping
from typing import Any

from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp.types import INTERNAL_ERROR
from mcp_types import CORE_RESULT_TYPES, SERVER_INFO_META_KEY
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request

from agentbox_common.mcp_progress import RunningCalls, cancelled_result
from agentbox_common.observability import ToolOutcome, note_tool_call

from ...upstreams.client import UpstreamRpcError
from ...upstreams.router import Route, UpstreamRouter
from .fast_path import ToolCall

#: What the SDK answers when a result cannot be shaped for the client's protocol version.
_UNSHAPEABLE = {"code": INTERNAL_ERROR, "message": "Handler returned an invalid result"}


class UpstreamCalls:
    """The fast path's handler for names an upstream owns (built-ins excepted)."""

    def __init__(
        self,
        router: UpstreamRouter,
        *,
        builtins: Container[str],
        server_info: Mapping[str, Any],
        running: RunningCalls | None = None,
    ) -> None:
        #: Where forwarded calls are kept for the door's ``notifications/cancelled`` handler.
        self.running = running if running is not None else RunningCalls()
        self.router = router
        self.builtins = builtins
        #: Stamped into 2026-07-28 results that carry none, as the SDK stamps the door's own.
        self.server_info = dict(server_info)

    def owns(self, name: str) -> bool:
        return name not in self.builtins and self.router.route(name) is not None

    def input_schema(self, name: str) -> dict[str, Any] | None:
        return self.router.input_schema(name)

    async def answer(self, call: ToolCall, request: Request) -> tuple[int, str]:
        route = self.router.route(call.name)
        assert route is not None  # owns() said so just before, with nothing awaited in between
        version = call.version
        started = time.perf_counter()
        with self.running.track(call.request_id) as cancel:
            status, answer = await self._answer(route, call.arguments, version)
        if cancel.cancelled_caught:  # the upstream's request was cancelled with it
            status, answer = (
                200,
                self._result(cancelled_result().model_dump(by_alias=True, exclude_none=True, mode="json"), version),
            )
        note_tool_call(call.name, _outcome(answer), time.perf_counter() - started)
        content = json.dumps(
            {"jsonrpc": "2.0", "id": call.request_id, **answer}, ensure_ascii=False, separators=(",", ":")
        )
        return status, content

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
            return {
                "result": self._shape_modern(result, version)
                if version in MODERN_PROTOCOL_VERSIONS
                else serialize_server_result("tools/call", version, result)
            }
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
