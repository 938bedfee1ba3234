"""What the MCP servers (the gateway, MCP mode) share for long tool calls: text as it comes as
``notifications/progress``, and the ``logging/setLevel`` level of ``notifications/message``."""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

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
