"""``run_prompt`` while the agent works: its answer as it is written, as ``notifications/progress``
(when the call carries a progress token), and its other events (session, usage, the end) as
``notifications/message`` at or above the level this call's client asked for (none if it did not).
A call run as a task (:mod:`agentbox_common.mcp_tasks`) sends neither, as the tasks extension says:
its answer so far is the task's output, which ``tasks/get`` shows."""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.types import LoggingLevel

from agentbox_common.mcp_progress import LogLevel, progress_reporter
from agentbox_common.mcp_tasks import task_output

from .adapters.base import AgentEvent

#: The logger name of the notifications this module sends.
LOGGER = "agent"


class AgentProgress:
    """An :data:`~.adapters.base.EventSink` for one call, and the context the MCP door hands each of
    its tool calls (``run_prompt`` sends its agent's events there): deltas become progress, the rest
    log messages."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], log_level: LogLevel) -> None:
        self._ctx = ctx
        self._progress = progress_reporter(ctx)
        self._log_level = log_level
        self._task_output = task_output()

    async def __call__(self, event: AgentEvent) -> None:
        if self._task_output is not None:
            if event.type == "delta" and event.text:
                await self._task_output(event.text)
            return
        if event.type == "delta":
            if self._progress is not None and event.text:
                await self._progress(event.text)
            return
        level: LoggingLevel = "warning" if event.type == "stop" and event.exit_code else "info"
        if not self._log_level.allows(self._ctx, level):
            return
        data: dict[str, Any] = {"event": event.type}
        if event.session_id:
            data["session_id"] = event.session_id
        if event.type == "usage":
            data["usage"] = dict(event.usage)
        if event.type == "stop":
            data.update(reason=event.reason, exit_code=event.exit_code)
            if event.stderr:
                data["stderr"] = event.stderr[-2000:]
        await self._ctx.session.send_log_message(level, data, logger=LOGGER, related_request_id=self._ctx.request_id)
