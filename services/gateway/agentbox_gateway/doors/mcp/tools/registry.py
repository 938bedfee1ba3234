"""The built-in tools' registry: the shared one (``agentbox_common.mcp_tools``), which checks every
call's arguments against the tool's schema (a null counts as an omitted field) and turns failures
into ``isError`` results. Built-in schemas are closed (``additionalProperties: false``) and say
"optional" only by leaving a field out of ``required``, never with a ``null`` type.

A built-in that reads its call takes a :class:`ToolContext` as its second parameter, handed to it by
the door that took the call; it never appears in a tool's input schema."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import HTTPConnection

from agentbox_common.mcp_tools import ToolRegistry, ToolSpec
from agentbox_common.mcp_tools.registry import ContextHandler, Handler

from ....planes.shell.prompts import Ask
from ....planes.streaming import OutputSink
from ...shared.addresses import request_public_base

__all__ = ["BuiltinRegistry", "BuiltinSpec", "ToolContext", "ToolRegistry", "ToolSpec"]


@dataclass(frozen=True)
class ToolContext:
    """What a built-in tool knows of its call: built per ``tools/call`` by the MCP door (the fast
    path and the SSE path included) and per ``POST /v1/mcp/sandbox/tools/{tool}`` by the REST door."""

    #: The HTTP request the call arrived with: how its caller reaches the gateway (the base of the
    #: URLs ``browser_get_info`` and ``sandbox_get_context`` hand out) and how it authenticated
    #: (whether those URLs carry a ticket). ``None``: no HTTP request.
    request: HTTPConnection | None = None
    #: Where the tool sends its output while it runs (a call that asked for progress); ``None``:
    #: the tool streams nothing.
    output: OutputSink | None = None
    #: How the tool asks its caller for a line of input (a task whose client answers elicitation:
    #: ``input_required``); ``None``: nobody can be asked.
    ask: Ask | None = None

    def public_base(self, fallback: str) -> str:
        """The gateway's address as this call's caller reaches it; ``fallback`` without a request."""
        return request_public_base(self.request, fallback) if self.request is not None else fallback


#: A built-in tool: its handler takes the arguments, and the call's context when it reads it.
BuiltinSpec = ToolSpec[Handler | ContextHandler[ToolContext]]

#: The registry of the built-in tools, called with a :class:`ToolContext`.
BuiltinRegistry = ToolRegistry[ToolContext]
