"""What the three MCP servers here (the gateway, the browser program, MCP mode) share: one tool
registry (specs, argument checking, the one catch turning failures into ``isError`` results), the
result shapes, and the builder of their low-level SDK server (``counting`` counts their calls)."""

from .registry import Arguments, ContextHandler, Handler, ToolRegistry, ToolSpec
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
from .server import CallContext, MoreTools, OnCall, build_server

__all__ = [
    "Arguments",
    "CallContext",
    "ContextHandler",
    "ErrorResult",
    "Handler",
    "MoreTools",
    "OnCall",
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
