"""How a built-in tool's outcome is shaped for MCP: the shared result helpers
(``agentbox_common.mcp_tools``), under the names the tool modules import."""

from __future__ import annotations

from agentbox_common.mcp_tools import (
    ToolError,
    compact_json,
    image_result,
    json_result,
    plane_error_text,
    text_result,
)

__all__ = ["ToolError", "compact_json", "image_result", "json_result", "plane_error_text", "text_result"]
