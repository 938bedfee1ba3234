"""What the three MCP servers here (the gateway, the browser program, MCP mode) share: one tool
registry (specs, argument checking, the one catch turning failures into ``isError`` results), the
result shapes, and the builder of their low-level SDK server."""

from .registry import Arguments, Handler, ToolRegistry, ToolSpec
from .results import (
    ErrorResult,
    ToolError,
    compact_json,
    error_result,
    image_result,
    json_result,
    plane_error_text,
    text_result,
)
from .server import UNKNOWN_TOOL, CallScope, MoreTools, build_server

__all__ = [
    "UNKNOWN_TOOL",
    "Arguments",
    "CallScope",
    "ErrorResult",
    "Handler",
    "MoreTools",
    "ToolError",
    "ToolRegistry",
    "ToolSpec",
    "build_server",
    "compact_json",
    "error_result",
    "image_result",
    "json_result",
    "plane_error_text",
    "text_result",
]
