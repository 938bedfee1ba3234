"""The five MCP tools of aicodebox's MCP mode, with its argument names, defaults and return shapes:
``run_prompt``, ``list_files``, ``read_file``, ``write_file`` and ``delete_file``.

Every result carries text content and, as FastMCP-based aicodebox does, structured content with a
``result`` key holding the same text; ``run_prompt`` adds ``session_id``, ``exit_code`` and
``attempts`` (and ``json`` with a schema) so a client can resume. ``read_file`` is the exception:
the file's text is sent once, as content only, and a file over 16 MiB is refused. Input schemas
are strict (``additionalProperties: false``, no free-form objects, so strict converters such as the
OpenAI Agents SDK's take every tool); an optional argument is one that is not required,
and an explicit ``null`` for it counts as not given. ``run_prompt``'s ``json_schema`` is therefore
published as a JSON string; an object is still taken, as older clients send it. Failures are
``isError`` results whose text names the cause; bad input changes nothing. ``run_prompt`` goes through the run service
(:mod:`.run_service`, shared with API mode, cron and Telegram), which takes the per-workspace lock
without waiting: a busy workspace is refused before any agent starts. File
operations (:mod:`agentbox_common.workspace_files`, race-free under the root) run in worker threads so a run, a
big file or a slow disk never stalls the server.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from mcp import types

from agentbox_common.mcp_tools import ContextHandler, Handler, ToolError, ToolRegistry, ToolSpec, text_result
from agentbox_common.workspace_files import READ_LIMIT, WorkspaceFiles

from .adapters.base import Adapter, EventSink
from .locks import WorkspaceLocks
from .run_service import RunService, RunSpec
from .settings import McpModeSettings

logger = logging.getLogger(__name__)


def result(text: str, extra: dict[str, Any] | None = None, *, is_error: bool = False) -> types.CallToolResult:
    return text_result(text, is_error=is_error, structured={"result": text, **(extra or {})})


def error_result(text: str, extra: dict[str, Any] | None) -> types.CallToolResult:
    """Every ``isError`` answer, the registry's own included, in the tools' shape."""
    return result(text, extra, is_error=True)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


READ_LIMIT_MIB = READ_LIMIT // (1024 * 1024)
_STRING = {"type": "string"}
_RESULT_ONLY = {"type": "object", "properties": {"result": _STRING}, "required": ["result"]}
_PATH_ONLY = {
    "type": "object",
    "properties": {"path": _STRING},
    "required": ["path"],
    "additionalProperties": False,
}

TOOL_DEFINITIONS: list[types.Tool] = [
    types.Tool(
        name="run_prompt",
        description=(
            "Run the coding agent on a prompt in the workspace (or a subdirectory of it) and return its "
            "final answer. A new session by default; set no_continue=false to continue the workspace's "
            "latest session or resume=<session_id> to continue a given one. With json_schema the answer "
            "is validated (and retried in fresh sessions) and returned as JSON; give the schema as a JSON "
            'string, e.g. json_schema=\'{"type": "object", "properties": {"answer": {"type": "integer"}}}\'. '
            "Only one run per workspace at a time: a busy workspace is an error."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The task for the agent"},
                "workspace": {
                    "type": "string",
                    "default": "",
                    "description": "Subdirectory of the workspace root (created if missing)",
                },
                "model": {"type": "string", "default": ""},
                "system_prompt": {
                    "type": "string",
                    "default": "",
                    "description": "Replaces the agent's system prompt",
                },
                "append_system_prompt": {
                    "type": "string",
                    "default": "",
                    "description": "Appended to the agent's system prompt",
                },
                "no_continue": {
                    "type": "boolean",
                    "default": True,
                    "description": "True: a new session; false: continue the latest one",
                },
                "resume": {"type": "string", "default": "", "description": "A session id to continue"},
                "thinking": {"type": "string", "default": "", "description": "Reasoning effort level"},
                "json_schema": {
                    "type": "string",
                    "default": "",
                    "description": (
                        "JSON Schema the answer must match, as a JSON string (an object is accepted too); "
                        "empty for a free-text answer"
                    ),
                },
            },
            "required": ["prompt"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "result": _STRING,
                "session_id": _STRING,
                "exit_code": {"type": "integer"},
                "attempts": {"type": "array", "items": {"type": "object"}},
                "json": {},
            },
            "required": ["result"],
        },
    ),
    types.Tool(
        name="list_files",
        description='List a directory of the workspace: JSON {"path", "entries": [{"name", "type"}]}.',
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string", "default": "", "description": "Default: the root"}},
            "additionalProperties": False,
        },
        output_schema=_RESULT_ONLY,
    ),
    types.Tool(
        name="read_file",
        description=f"Read a workspace file as text (undecodable bytes are replaced); at most {READ_LIMIT_MIB} MiB.",
        input_schema=_PATH_ONLY,
    ),
    types.Tool(
        name="write_file",
        description="Create or overwrite a workspace file (parent directories are created).",
        input_schema={
            "type": "object",
            "properties": {"path": _STRING, "content": _STRING},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        output_schema=_RESULT_ONLY,
    ),
    types.Tool(
        name="delete_file",
        description="Delete a workspace file or symlink (a symlink itself, not its target; directories are refused).",
        input_schema=_PATH_ONLY,
        output_schema=_RESULT_ONLY,
    ),
]


#: What run_prompt takes besides what it publishes: ``json_schema`` as an object too (older clients).
RUN_PROMPT_ACCEPTS: dict[str, Any] = {
    **TOOL_DEFINITIONS[0].input_schema,
    "properties": {**TOOL_DEFINITIONS[0].input_schema["properties"], "json_schema": {"type": ["string", "object"]}},
}


def parse_json_schema(value: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """``run_prompt``'s ``json_schema`` as a schema object (``None``: none given, or an empty string)."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        schema = json.loads(value)
    except ValueError as exc:
        raise ToolError(f"json_schema is not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise ToolError("json_schema must be a JSON object (a JSON Schema)")
    return schema


class McpTools:
    """The tools bound to one workspace root, lock registry and adapter."""

    def __init__(self, settings: McpModeSettings, locks: WorkspaceLocks, adapter: Adapter) -> None:
        self.runs = RunService(settings, adapter, locks)
        self.files = WorkspaceFiles(settings.workspace)
        handlers: dict[str, Handler | ContextHandler[EventSink | None]] = {
            "run_prompt": self.run_prompt,
            "list_files": self.list_files,
            "read_file": self.read_file,
            "write_file": self.write_file,
            "delete_file": self.delete_file,
        }
        self.registry: ToolRegistry[EventSink | None] = ToolRegistry(
            (
                ToolSpec(
                    tool.name,
                    tool.description or "",
                    tool.input_schema,
                    handlers[tool.name],
                    tool.output_schema,
                    RUN_PROMPT_ACCEPTS if tool.name == "run_prompt" else None,
                )
                for tool in TOOL_DEFINITIONS
            ),
            error_result=error_result,
        )

    # --- run_prompt -------------------------------------------------------------------------

    async def run_prompt(self, args: dict[str, Any], events: EventSink | None) -> types.CallToolResult:
        """``events``: where the agent's events go while it runs (the MCP door's call context)."""
        prompt: str = args["prompt"]
        if not prompt.strip():
            raise ToolError("prompt must not be empty")
        spec = RunSpec(
            prompt=prompt,
            workspace=args.get("workspace", ""),
            model=args.get("model", ""),
            system_prompt=args.get("system_prompt", ""),
            append_system_prompt=args.get("append_system_prompt", ""),
            no_continue=args.get("no_continue", True),
            resume=args.get("resume", ""),
            thinking=args.get("thinking", ""),
            json_schema=parse_json_schema(args.get("json_schema")),
        )
        request = await self.runs.prepare(spec)
        outcome = await self.runs.execute(request, events)
        details: dict[str, Any] = {
            "session_id": outcome.session_id,
            "exit_code": outcome.exit_code,
            "attempts": [attempt.as_dict() for attempt in outcome.attempts],
        }
        failure = outcome.failure
        if failure is not None:
            raise ToolError(failure, details)
        if spec.json_schema is None:
            return result(outcome.text, details)
        return result(_dumps(outcome.json), {**details, "json": outcome.json})

    # --- file tools -------------------------------------------------------------------------

    async def list_files(self, args: dict[str, Any]) -> types.CallToolResult:
        path = args.get("path", "")
        entries = await anyio.to_thread.run_sync(self.files.list, path)
        listing = [{"name": e.name, "type": "dir" if e.is_dir else "file"} for e in entries]
        return result(_dumps({"path": path or "/", "entries": listing}))

    async def read_file(self, args: dict[str, Any]) -> types.CallToolResult:
        data = await anyio.to_thread.run_sync(self.files.read_bytes, args["path"])
        # The text once, as content only: no structured copy of a file of up to READ_LIMIT bytes.
        text = data.decode("utf-8", errors="replace")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def write_file(self, args: dict[str, Any]) -> types.CallToolResult:
        path, content = args["path"], args["content"]
        await anyio.to_thread.run_sync(self.files.write_text, path, content)
        return result(_dumps({"status": "ok", "path": path, "size": len(content)}))

    async def delete_file(self, args: dict[str, Any]) -> types.CallToolResult:
        path = args["path"]
        await anyio.to_thread.run_sync(self.files.delete, path)
        return result(_dumps({"status": "ok", "path": path}))
