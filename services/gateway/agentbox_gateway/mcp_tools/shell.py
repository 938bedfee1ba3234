"""``sandbox_execute_bash``: the MCP door of the shell plane."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from ..mcp_streaming import current_output_sink
from ..planes.shell import DEFAULT_TOOL_TIMEOUT, OUTPUT_LIMIT
from .registry import ToolSpec
from .results import json_result

if TYPE_CHECKING:
    from ..planes import Planes

DESCRIPTION = (
    "Execute a shell command. Sessions are managed automatically. "
    "Commands run in one shared bash session unless new_session is set, so the working directory, "
    "exported variables and shell functions carry over between calls; the result's cwd is where the "
    "session ended. Output (stdout and stderr interleaved) is cut to its first and last "
    f"{OUTPUT_LIMIT // 2:,} characters when longer; stdin is empty."
)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "cmd": {"type": "string", "description": "The command to run (bash syntax)."},
        "cwd": {
            "type": "string",
            "description": "Absolute directory to run in; the session moves there first.",
        },
        "new_session": {
            "type": "boolean",
            "description": "Run in a fresh session instead of the shared one (its session_id is returned).",
        },
        "timeout": {
            "type": "integer",
            "description": f"Seconds before the command and its child processes are killed "
            f"(default {DEFAULT_TOOL_TIMEOUT}).",
        },
        "session_id": {
            "type": "string",
            "description": "Run in this existing session (a session_id from an earlier result).",
        },
    },
    "required": ["cmd"],
    "additionalProperties": False,
}


def tools(planes: Planes) -> list[ToolSpec]:
    shell = planes.shell

    async def execute_bash(args: dict[str, Any]) -> types.CallToolResult:
        record = await shell.run(
            args["cmd"],
            cwd=args.get("cwd") or None,
            new_session=bool(args.get("new_session")),
            time_limit=args.get("timeout"),
            session_id=args.get("session_id") or None,
            on_output=current_output_sink.get(),
        )
        return json_result(
            {
                "cwd": record.cwd,
                "exit_code": record.exit_code,
                "output": record.output.text(OUTPUT_LIMIT),
                "session_id": record.session_id,
                "status": record.status,
            }
        )

    return [ToolSpec("sandbox_execute_bash", DESCRIPTION, INPUT_SCHEMA, execute_bash)]
