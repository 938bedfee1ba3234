"""Finished tool calls counted in the served request's record (``agentbox_common.observability``), for
the servers that keep metrics (every program's): pass :func:`count_call` as
``build_server(..., on_call=...)``. Kept out of the package's imports, which need no metrics."""

from __future__ import annotations

from mcp import types

from agentbox_common.observability import ToolOutcome, note_tool_call


def count_call(tool: str, result: types.CallToolResult | None, seconds: float) -> None:
    """``result`` ``None``: the call was a JSON-RPC error."""
    if result is None:
        outcome = ToolOutcome.JSONRPC_ERROR
    else:
        outcome = ToolOutcome.IS_ERROR if result.is_error else ToolOutcome.OK
    note_tool_call(tool, outcome, seconds)
