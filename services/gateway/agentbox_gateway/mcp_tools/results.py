"""How a tool's outcome is shaped for MCP: text, compact sorted JSON (as aiod prints it), images."""

from __future__ import annotations

import json
from typing import Any

from mcp import types


class ToolError(Exception):
    """The tool ran and failed; the message (or JSON payload) becomes an ``isError`` result."""

    def __init__(self, message: str, payload: Any = None) -> None:
        super().__init__(message)
        self.payload = payload

    def to_result(self) -> types.CallToolResult:
        if self.payload is not None:
            return json_result(self.payload, is_error=True)
        return text_result(str(self), is_error=True)


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def json_result(value: Any, *, is_error: bool = False) -> types.CallToolResult:
    return text_result(compact_json(value), is_error=is_error)


def image_result(data_base64: str, mime_type: str, caption: str | None = None) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.ImageContent(type="image", data=data_base64, mime_type=mime_type)]
    if caption:
        content.append(types.TextContent(type="text", text=caption))
    return types.CallToolResult(content=content)
