"""What the MCP servers (the gateway, the browser program, MCP mode) share for long tool calls: text
as it comes as ``notifications/progress``, the ``logging/setLevel`` level of
``notifications/message``, and the running calls ``notifications/cancelled`` can name."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

logger = logging.getLogger(__name__)

#: RFC 5424 levels in MCP's order, least severe first.
LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class ProgressReporter:
    """Sends text as ``notifications/progress`` for the call's progress token, with the SDK's own
    per-request channel: ``progress`` is the characters sent so far (it only grows), ``message``
    the new text."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._session = ctx.session
        self.sent = 0

    async def __call__(self, text: str) -> None:
        self.sent += len(text)
        await self._session.report_progress(self.sent, None, text)


def progress_reporter(ctx: ServerRequestContext[Any, Any]) -> ProgressReporter | None:
    """A reporter when the call asked for progress (``_meta.progressToken``), else ``None``."""
    return ProgressReporter(ctx) if progress_token_from_params(ctx.params) is not None else None


class LogLevel:
    """The least level of the ``notifications/message`` a server sends, set by ``logging/setLevel``
    (stateless servers keep one level for all clients); none are sent before a client sets one, so
    answers stay as they were for clients that never asked. Registering its handler is what
    declares the ``logging`` capability."""

    def __init__(self, level: types.LoggingLevel | None = None) -> None:
        self.level = level

    def allows(self, level: types.LoggingLevel) -> bool:
        return self.level is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.level)

    def install(self, server: Server) -> None:
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.level = params.level
        return types.EmptyResult()


class RunningCalls:
    """Tool calls in progress by JSON-RPC request id, for ``notifications/cancelled``.

    Stateless clients share one id space (each numbers its requests from the start), so a cancel
    naming an id that more than one running call has is ambiguous and cancels none."""

    def __init__(self) -> None:
        self._scopes: dict[types.RequestId, list[anyio.CancelScope]] = {}

    @contextlib.contextmanager
    def track(self, request_id: types.RequestId | None) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if request_id is None:
                yield scope
                return
            scopes = self._scopes.setdefault(request_id, [])
            scopes.append(scope)
            try:
                yield scope
            finally:
                scopes.remove(scope)
                if not scopes:
                    del self._scopes[request_id]

    def cancel(self, request_id: types.RequestId | None) -> bool:
        scopes = self._scopes.get(request_id) if request_id is not None else None
        if not scopes:
            return False
        if len(scopes) > 1:
            logger.warning("not cancelling request %r: %d running calls have that id", request_id, len(scopes))
            return False
        scopes[0].cancel()
        return True

    async def on_cancelled(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelledNotificationParams
    ) -> None:
        self.cancel(params.request_id)

    def install(self, server: Server) -> None:
        server.add_notification_handler("notifications/cancelled", types.CancelledNotificationParams, self.on_cancelled)


def cancelled_result() -> types.CallToolResult:
    """What a call cancelled by ``notifications/cancelled`` returns (the client no longer waits for it)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text="cancelled by the client")], is_error=True)
