"""``sandbox_file_operations``: the file plane's eight actions as one MCP tool. Results are the
action's JSON object (compact, sorted keys, as aiod prints it); failures are ``isError`` results
carrying the whole structured failure object.

The objects are aiod's, written here from the plane's records (:func:`action_fields`,
:func:`error_fields`); the REST file routes answer with the same fields, as the SDK's models name them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from mcp import types

from ....planes.files import ENCODINGS, FileOperationError, FilePlane, FileResult, GlobQuery, GrepQuery, ListQuery
from ...shared.file_fields import action_fields, error_fields
from .registry import BuiltinSpec, ToolSpec
from .results import ToolError, json_result

if TYPE_CHECKING:
    from ....planes import Planes

ACTIONS = ("read", "write", "replace", "search", "find", "list", "grep", "glob")

DESCRIPTION = """Unified file system operations tool for agents.

Actions (`path` is absolute; a file for read/write/replace/search, a directory for find/list/grep/glob):
- read: file content. `encoding` utf-8 (default), base64 (binary) or raw (invalid UTF-8 replaced);
  `start_line`/`end_line` select lines (0-based start, exclusive end). Files over 16 MiB are refused.
- write: write `content` (base64 when `encoding` is base64); `append` adds to the end; parent
  directories are created. Returns bytes_written.
- replace: replace every occurrence of `content` with `target`. Returns replaced_count.
- search: lines of the file matching the regex in `content`, with 1-based line_numbers.
- find: files under `path` whose name matches the glob `pattern` (e.g. "*.py").
- list: directory entries with size and modified time; `recursive`, `show_hidden`,
  `file_types` (e.g. [".py"]).
- grep: regex (or literal with `fixed_strings`) `pattern` across files under `path`, ripgrep-style:
  `include`/`exclude` globs, `case_insensitive`, `context_before`/`context_after`, `max_results`
  (at most 500); hidden, binary and >1 MiB files are skipped.
- glob: paths matching a glob `pattern` such as "**/*.ts"; `include`/`exclude`, `show_hidden`,
  `files_only` (default true), `include_metadata` (default true), `max_results` (at most 5000).

Failures return success:false and an `error` object with errno, errno_name, error_type (not_found,
permission_denied, already_exists, invalid_path, invalid_target, decode_error, bad_request, ...),
exception_type, message, operation, path and retryable."""


def _optional(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


def _string_list(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS), "description": "The operation to perform"},
        "path": {"type": "string", "description": "Absolute path of the file or directory"},
        "content": _optional("string", "write: the data; replace: the text to replace; search: a regex"),
        "target": _optional("string", "replace: the replacement text"),
        "pattern": _optional("string", "find: a file-name glob; grep: a regex or literal; glob: a path glob"),
        "encoding": _optional("string", "read/write: utf-8 (default), base64 or raw", enum=list(ENCODINGS)),
        "start_line": _optional("integer", "read: first line, 0-based", minimum=0),
        "end_line": _optional("integer", "read: end line, 0-based, exclusive", minimum=0),
        "append": _optional("boolean", "write: append instead of replacing the file (default false)"),
        "recursive": _optional("boolean", "list: descend into sub-directories (default false); grep: (default true)"),
        "show_hidden": _optional("boolean", "list, glob: include dot-files (default false)"),
        "sudo": _optional("boolean", "Accepted for AIO compatibility; the gateway's own permissions apply"),
        "file_types": _string_list('list: only files with these extensions, e.g. [".py", ".md"]'),
        "include": _string_list('grep, glob: only files matching these globs, e.g. ["*.py"]'),
        "exclude": _string_list('grep, glob: skip files and directories matching these globs, e.g. ["node_modules"]'),
        "case_insensitive": _optional("boolean", "grep: ignore case (default false)"),
        "fixed_strings": _optional("boolean", "grep: treat pattern as a literal string (default false)"),
        "context_before": _optional("integer", "grep: lines of context before each match (default 0)", minimum=0),
        "context_after": _optional("integer", "grep: lines of context after each match (default 0)", minimum=0),
        "max_results": _optional("integer", "grep: at most 500 (default); glob: at most 5000 (default)", minimum=1),
        "include_metadata": _optional("boolean", "glob: include size, modified time, is_directory (default true)"),
        "files_only": _optional("boolean", "glob: files only, no directories (default true)"),
    },
    "required": ["action", "path"],
    "additionalProperties": False,
}


def action_object(action: str, result: FileResult) -> dict[str, Any]:
    """The whole object an agent sees for a successful action."""
    return {"action": action, "success": True, **action_fields(result)}


def failure_object(error: FileOperationError, action: str) -> dict[str, Any]:
    """The whole failure object an agent sees (``success: false`` plus the error)."""
    return {
        "action": action,
        "error": error_fields(error),
        "message": error.message,
        "path": error.path,
        "success": False,
    }


def _flag(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    return default if value is None else bool(value)


Action = Callable[[FilePlane, str, dict[str, Any]], Awaitable[FileResult]]

_DISPATCH: dict[str, Action] = {
    "read": lambda files, path, a: files.read(
        path, encoding=a.get("encoding"), start_line=a.get("start_line"), end_line=a.get("end_line")
    ),
    "write": lambda files, path, a: files.write(
        path, a.get("content"), encoding=a.get("encoding"), append=_flag(a, "append", False)
    ),
    "replace": lambda files, path, a: files.replace(path, a.get("content"), a.get("target")),
    "search": lambda files, path, a: files.search(path, a.get("content")),
    "find": lambda files, path, a: files.find(path, a.get("pattern")),
    "list": lambda files, path, a: files.list(path, ListQuery.of(a)),
    "grep": lambda files, path, a: files.grep(path, GrepQuery.of(a)),
    "glob": lambda files, path, a: files.glob(path, GlobQuery.of(a, include_hidden="show_hidden")),
}


def tools(planes: Planes) -> list[BuiltinSpec]:
    files = planes.files

    async def file_operations(args: dict[str, Any]) -> types.CallToolResult:
        action, path = args["action"], args["path"]
        try:
            result = await _DISPATCH[action](files, path, args)
        except FileOperationError as exc:
            raise ToolError(exc.message, payload=failure_object(exc, action)) from None
        return json_result(action_object(action, result))

    return [ToolSpec("sandbox_file_operations", DESCRIPTION, INPUT_SCHEMA, file_operations)]
