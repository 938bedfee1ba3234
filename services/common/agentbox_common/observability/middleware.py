"""One ASGI middleware, outermost in each app, for request ids, request metrics and the access log.

Outermost so that refusals by the auth, Origin and Host guards are counted, logged and carry an
``x-request-id`` like every other answer. It reads the route template Starlette leaves in
``scope["route"]`` after routing (no matching of its own), so its cost is a few dictionary look-ups
and, when enabled, one log record."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..redaction import CLEAN_RECORD, escape_controls, redact_query, redact_text
from .metrics import UNMATCHED_ROUTE, Metrics
from .request_ids import (
    REQUEST_ID_HEADER,
    accepted_request_id,
    reset_current_request_id,
    set_current_request_id,
)
from .tool_calls import RequestRecord, current_record

access_logger = logging.getLogger("agentbox.access")
_HEADER = REQUEST_ID_HEADER.encode()


def route_template(scope: Scope) -> str:
    """The matched route's path template under its mount, or ``unmatched``. A mount is left in
    ``scope["route"]`` when its own routes matched nothing (unmatched) or when it serves an app
    without routes (its prefix and ``{path}``)."""
    route = scope.get("route")
    if isinstance(route, Mount):
        return UNMATCHED_ROUTE if route.routes else f"{scope.get('root_path', '')}/{{path}}"
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return UNMATCHED_ROUTE
    root: str = scope.get("root_path", "")
    return root + path


class ObservabilityMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics | None, *, access_log: bool = True) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = accepted_request_id(_header(scope, _HEADER))
        record = RequestRecord(request_id=request_id, metrics=self.metrics)
        status = 0
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (_HEADER, request_id.encode())]
            elif kind == "websocket.accept":
                status = 101
                message["headers"] = [*message.get("headers", ()), (_HEADER, request_id.encode())]
            elif kind == "websocket.close" and not status:
                status = 403  # closed before the handshake completed: the server answers 403
            await send(message)

        id_token = set_current_request_id(request_id)
        record_token = current_record.set(record)
        try:
            await self.app(scope, receive, send_with_id)
        except BaseException:
            status = status or 500
            raise
        finally:
            current_record.reset(record_token)
            reset_current_request_id(id_token)
            self._finish(scope, record, status, time.perf_counter() - started)

    def _finish(self, scope: Scope, record: RequestRecord, status: int, seconds: float) -> None:
        method = scope.get("method", "WS") if scope["type"] == "http" else "WS"
        route = route_template(scope)
        if self.metrics is not None:
            self.metrics.observe_request(method, route, status, seconds)
        if self.access_log and access_logger.isEnabledFor(logging.INFO):
            client = scope.get("client")
            fields = {
                "request_id": record.request_id,
                "method": method,
                "route": route,
                "path": escape_controls(redact_text(scope.get("path", ""))),
                "query": redact_query(scope.get("query_string", b"").decode("latin-1")),
                "status": status,
                "duration_ms": round(seconds * 1000, 3),
                "client": f"{client[0]}:{client[1]}" if client else None,
                "tool": escape_controls(",".join(record.tools)) or None,
            }
            access_logger.info(_text_line(fields), extra={"fields": fields, CLEAN_RECORD: True})


def _header(scope: Scope, name: bytes) -> bytes | None:
    headers: Iterable[tuple[bytes, bytes]] = scope.get("headers", ())
    for key, value in headers:
        if key == name:
            return value
    return None


def _text_line(fields: dict[str, object]) -> str:
    target = f"{fields['path']}?{fields['query']}" if fields["query"] else str(fields["path"])
    line = f"{fields['method']} {target} {fields['status']} {fields['duration_ms']}ms rid={fields['request_id']}"
    if fields["client"]:
        line += f" client={fields['client']}"
    if fields["tool"]:
        line += f" tool={fields['tool']}"
    return line
