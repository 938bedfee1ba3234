"""What the MCP servers (the gateway, the browser program, MCP mode) share for long tool calls: text
as it comes as ``notifications/progress``, the ``logging/setLevel`` level of
``notifications/message``, and the running calls ``notifications/cancelled`` can name."""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import anyio
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

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
    """The least level of the ``notifications/message`` a server sends, kept per client: none are
    ever sent to a client that did not ask, so answers stay as they were for clients that never did.

    * Handshake era: ``logging/setLevel`` sets it for the caller's session, the ``Mcp-Session-Id``
      the request carries (a stateless server that hands out ids keeps the level by it). A request
      without one is a one-request client: its ``setLevel`` has nothing to apply to later.
    * 2026-07-28: ``logging/setLevel`` is gone; each request carries its own level in ``_meta``
      (``io.modelcontextprotocol/logLevel``), and only that request's messages follow it.

    Registering its handler is what declares the ``logging`` capability."""

    def __init__(self, max_sessions: int = 10_000) -> None:
        #: Level per session id, least recently set first (the first to go past ``max_sessions``).
        self._levels: OrderedDict[str, types.LoggingLevel] = OrderedDict()
        self._max_sessions = max_sessions

    def allows(self, ctx: ServerRequestContext[Any, Any], level: types.LoggingLevel) -> bool:
        """Whether this call's client asked for messages at ``level``."""
        asked: Any
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            asked = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        else:
            session = _session_id(ctx)
            asked = self._levels.get(session) if session else None
        return asked in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(asked)

    def install(self, server: Server) -> None:
        server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)

    async def _set_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        session = _session_id(ctx)
        if session:
            self._levels[session] = params.level
            self._levels.move_to_end(session)
            while len(self._levels) > self._max_sessions:
                self._levels.popitem(last=False)
        return types.EmptyResult()


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The caller's ``Mcp-Session-Id`` (``None`` for a request outside a session)."""
    request = ctx.request
    headers = getattr(request, "headers", None)
    return headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None


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
