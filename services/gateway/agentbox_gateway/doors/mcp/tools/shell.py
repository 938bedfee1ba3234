"""``sandbox_execute_bash`` and ``sandbox_open_terminal``: the MCP door of the shell plane."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from ....auth.guards import page_ticket
from ....planes.shell import DEFAULT_TOOL_TIMEOUT, OUTPUT_LIMIT, InvalidRequest
from ...shared.addresses import gateway_base
from ...web.terminal import TERMINAL_PREFIX
from ..apps import TERMINAL_URI, open_view, tool_meta
from .registry import BuiltinSpec, ToolContext, ToolSpec
from .results import json_result

if TYPE_CHECKING:
    from ....planes import Planes

DESCRIPTION = (
    "Execute a shell command. Sessions are managed automatically. "
    "Commands run in one shared bash session unless new_session is set, so the working directory, "
    "exported variables and shell functions carry over between calls; the result's cwd is where the "
    "session ended. Output (stdout and stderr interleaved) is cut to its first and last "
    f"{OUTPUT_LIMIT // 2:,} characters when longer; stdin is empty, except in a task of a client that "
    "answers elicitation, which is asked for the line a command waits on (input_required). A session "
    "owns what it starts, background jobs and setsid/nohup ones too: they die when it is closed or "
    "cleaned up. For a dev server or other app that must keep running, set detach (it returns at once "
    "with the app's pid and log_file)."
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
        "detach": {
            "type": "boolean",
            "description": "Start the command as an app outside every session (it outlives their cleanup; "
            "stop it with kill <pid>), in cwd or the session's directory; output goes to log_file. "
            "Not with timeout or new_session.",
        },
    },
    "required": ["cmd"],
    "additionalProperties": False,
}


def tools(planes: Planes) -> list[BuiltinSpec]:
    shell = planes.shell

    async def execute_bash(args: dict[str, Any], call: ToolContext) -> types.CallToolResult:
        if args.get("detach"):
            return await detach(args)
        record = await shell.run(
            args["cmd"],
            cwd=args.get("cwd") or None,
            new_session=bool(args.get("new_session")),
            time_limit=args.get("timeout"),
            session_id=args.get("session_id") or None,
            on_output=call.output,
            ask=call.ask,
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

    async def detach(args: dict[str, Any]) -> types.CallToolResult:
        clashing = [name for name in ("timeout", "new_session") if args.get(name)]
        if clashing:
            raise InvalidRequest(
                f"{' and '.join(clashing)} cannot be combined with detach: a detached app runs "
                "outside every session and is never timed out"
            )
        app = await shell.detach(args["cmd"], cwd=args.get("cwd") or None, session_id=args.get("session_id") or None)
        return json_result(
            {"cwd": app.cwd, "detached": True, "log_file": app.log_file, "pid": app.pid, "status": "running"}
        )

    return [ToolSpec("sandbox_execute_bash", DESCRIPTION, INPUT_SCHEMA, execute_bash)]


TERMINAL_DESCRIPTION = (
    "Open an interactive terminal for a person: a bash shell in the sandbox, for as long as it is "
    "open. Returns terminal_url, the page a person opens in a browser (with a key set, signed for that "
    "page alone, good once within the ticket lifetime); hosts that render MCP Apps show the terminal "
    "beside the result. For commands of your own use sandbox_execute_bash."
)


def terminal_tools(planes: Planes) -> list[BuiltinSpec]:
    """``sandbox_open_terminal``: the web terminal (``doors/web/terminal.py``) for a person, as a
    link and as an MCP App; each opening is a shell of its own, closed with its socket."""
    local_base = gateway_base(planes.settings)
    ttl = planes.settings.ticket_ttl

    async def open_terminal(args: dict[str, Any], call: ToolContext) -> types.CallToolResult:
        caller = call.request.scope if call.request is not None else None
        base = call.public_base(local_base).rstrip("/")
        ticket = page_ticket(caller, TERMINAL_PREFIX) if caller is not None else None
        result = json_result({"terminal_url": f"{base}{TERMINAL_PREFIX}" + (f"?{ticket}" if ticket else "")})
        open_view(result, caller, base, ttl, TERMINAL_PREFIX)
        return result

    schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    return [
        ToolSpec("sandbox_open_terminal", TERMINAL_DESCRIPTION, schema, open_terminal, meta=tool_meta(TERMINAL_URI))
    ]
