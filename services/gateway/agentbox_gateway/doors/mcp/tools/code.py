"""``sandbox_execute_code``: the code plane as an MCP tool, with aiod's published schema.

The answer is what the model reads: the interpreter's stdout, verbatim (seed step 3: ``sum written``).
Only when nothing was printed does a trailing expression's value stand in, so ``2 + 2`` is not an
empty answer. An exception, a non-zero exit or a timeout is ``isError`` with the traceback, after
whatever the code printed before it failed. Rich outputs follow the text so clients show them: a
figure (``image/png``) is an image block, HTML (a DataFrame) or SVG an embedded resource, any other
display its ``text/plain``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from .registry import BuiltinSpec, ToolContext, ToolSpec
from .results import text_result

if TYPE_CHECKING:
    from ....planes import Planes
    from ....planes.code import Execution

DESCRIPTION = "Execute code in Python or JavaScript runtime."

INPUT_SCHEMA: dict[str, Any] = {
    "properties": {
        "code": {"description": "Code to execute", "type": "string"},
        "language": {"description": "Programming language ('python', 'javascript')", "type": "string"},
        "timeout": {"description": "Execution timeout in seconds", "type": "integer"},
    },
    "required": ["code"],
    "type": "object",
}


def answer_text(execution: Execution) -> str:
    if execution.stdout or execution.result is None:
        return execution.stdout
    return str(execution.result.get("text/plain", ""))


def rich_blocks(execution: Execution) -> list[types.ContentBlock]:
    """The displays and the result as MCP content, in order; a result is shown as text already,
    so only its image or document adds a block."""
    blocks: list[types.ContentBlock] = []
    bundles = [(output["data"], True) for output in execution.displays]
    if execution.result is not None:
        bundles.append((execution.result, False))
    for data, displayed in bundles:
        name = f"agentbox://code/output/{len(blocks) + 1}"
        if isinstance(data.get("image/png"), str):
            blocks.append(types.ImageContent(type="image", data=data["image/png"], mime_type="image/png"))
        elif isinstance(data.get("text/html"), str):
            html = types.TextResourceContents(uri=f"{name}.html", mime_type="text/html", text=data["text/html"])
            blocks.append(types.EmbeddedResource(type="resource", resource=html))
        elif isinstance(data.get("image/svg+xml"), str):
            svg = types.TextResourceContents(uri=f"{name}.svg", mime_type="image/svg+xml", text=data["image/svg+xml"])
            blocks.append(types.EmbeddedResource(type="resource", resource=svg))
        elif displayed and isinstance(data.get("text/plain"), str):
            blocks.append(types.TextContent(type="text", text=data["text/plain"]))
    return blocks


def failure_text(execution: Execution) -> str:
    parts = [execution.stdout, execution.stderr]
    if execution.error is not None:
        parts.append(execution.error.text)
    return "\n".join(part.rstrip("\n") for part in parts if part)


def tools(planes: Planes) -> list[BuiltinSpec]:
    async def execute_code(arguments: dict[str, Any], call: ToolContext) -> types.CallToolResult:
        execution = await planes.code.execute(
            arguments.get("language"),
            arguments["code"],
            timeout=arguments.get("timeout"),
            on_output=call.output,
        )
        failed = execution.status != "ok"
        result = text_result(failure_text(execution) if failed else answer_text(execution), is_error=failed)
        blocks = rich_blocks(execution)
        if blocks:
            text = result.content[0]
            keep = isinstance(text, types.TextContent) and text.text
            result.content = [*(result.content if keep else []), *blocks]
        return result

    return [ToolSpec("sandbox_execute_code", DESCRIPTION, INPUT_SCHEMA, execute_code)]
