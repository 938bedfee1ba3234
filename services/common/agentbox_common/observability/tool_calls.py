"""Doors report the MCP tool a request called, and how it ended, to the request's record.

The record is the middleware's (see :mod:`.middleware`), found through a context variable so the
MCP doors need no reference to the app that serves them. Outside a served request (in-memory tests,
background work) a note goes nowhere."""

from __future__ import annotations

import enum
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .metrics import Metrics


class ToolOutcome(enum.StrEnum):
    OK = "ok"
    #: The tool ran and failed: an ``isError`` result.
    IS_ERROR = "is_error"
    #: The call never ran a tool: a JSON-RPC error (unknown tool, upstream error).
    JSONRPC_ERROR = "jsonrpc_error"


@dataclass
class RequestRecord:
    """What one HTTP request did, filled in while it is served and read when it ends."""

    request_id: str
    metrics: Metrics | None
    tools: list[str] = field(default_factory=list)


current_record: ContextVar[RequestRecord | None] = ContextVar("agentbox_request_record", default=None)


def note_tool_call(tool: str, outcome: ToolOutcome, seconds: float) -> None:
    """Count a finished ``tools/call`` and name it in the request's access-log line."""
    record = current_record.get()
    if record is None:
        return
    record.tools.append(tool)
    if record.metrics is not None:
        record.metrics.observe_tool_call(tool, outcome, seconds)
