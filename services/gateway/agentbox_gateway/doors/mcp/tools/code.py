"""``sandbox_execute_code``: the code plane as an MCP tool, with aiod's published schema.

The answer is what the model reads: the interpreter's stdout, verbatim (seed step 3: ``sum written``).
Only when nothing was printed does a trailing expression's value stand in, so ``2 + 2`` is not an
empty answer. An exception, a non-zero exit or a timeout is ``isError`` with the traceback, after
whatever the code printed before it failed."""

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
    return execution.result.get("text/plain", "")


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
        if execution.status == "ok":
            return text_result(answer_text(execution))
        return text_result(failure_text(execution), is_error=True)

    return [ToolSpec("sandbox_execute_code", DESCRIPTION, INPUT_SCHEMA, execute_code)]
