"""The built-in tools' registry: the shared one (``agentbox_common.mcp_tools``), which checks every
call's arguments against the tool's schema (a null counts as an omitted field) and turns failures
into ``isError`` results. Built-in schemas are closed (``additionalProperties: false``) and say
"optional" only by leaving a field out of ``required``, never with a ``null`` type."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from agentbox_common.mcp_tools import ToolRegistry, ToolSpec

__all__ = ["ToolRegistry", "ToolSpec", "current_request"]

#: The HTTP request a tool call arrived with (set by the MCP door; None elsewhere), for the tools
#: whose answer depends on how the caller reaches the gateway (``browser_get_info``'s ``cdp_url``,
#: ``sandbox_get_context``'s preview URLs).
current_request: ContextVar[Any] = ContextVar("current_request", default=None)
