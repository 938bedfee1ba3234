"""``sandbox_str_replace_editor``: Anthropic's text-editor tool over the editor plane. The result is
AIO 1.x's JSON object (``output``, ``error``, ``prev_exist``, ``old_content``, ``new_content`` ...);
a refused command is an ``isError`` result with the same object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from ....planes.files import COMMANDS, REPLACE_MODES
from ...shared.file_fields import editor_object
from .registry import BuiltinSpec, ToolSpec
from .results import json_result

if TYPE_CHECKING:
    from ....planes import Planes

DESCRIPTION = """Custom editing tool for viewing, creating and editing files.
* State is persistent across command calls and discussions with the user.
* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory,
  `view` lists non-hidden files and directories up to 2 levels deep.
* The `create` command cannot be used if the specified `path` already exists as a file.
* If a `command` generates a long output, it will be truncated and marked with `<response clipped>`.
* The `undo_edit` command will revert the last edit made to the file at `path`.

Notes for using the `str_replace` command:
* The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file.
  Be mindful of whitespaces!
* If the `old_str` parameter is not unique in the file, the replacement will not be performed. Make
  sure to include enough context in `old_str` to make it unique, or set `replace_mode` (ALL, FIRST, LAST).
* The `new_str` parameter should contain the edited lines that should replace the `old_str`."""


def _described(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": text, **extra}


INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": _described(
            "string",
            "The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`.",
            enum=list(COMMANDS),
        ),
        "path": _described("string", "Absolute path to file or directory, e.g. `/workspace/file.py` or `/workspace`."),
        "file_text": _described(
            "string",
            "Required parameter of `create` command, with the content of the file to be created.",
        ),
        "old_str": _described(
            "string",
            "Required parameter of `str_replace` command containing the string in `path` to replace.",
        ),
        "new_str": _described(
            "string",
            "Optional parameter of `str_replace` command containing the new string (if not given, no "
            "string will be added). Required parameter of `insert` command containing the string to insert.",
        ),
        "insert_line": _described(
            "integer",
            "Required parameter of `insert` command. The `new_str` will be inserted AFTER the line "
            "`insert_line` of `path` (0 inserts at the top).",
        ),
        "view_range": _described(
            "array",
            "Optional parameter of `view` command when `path` points to a file. If none is given, the full "
            "file is shown. If provided, the file will be shown in the indicated line number range, e.g. "
            "[11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows "
            "all lines from `start_line` to the end of the file.",
            items={"type": "integer"},
        ),
        "replace_mode": _described(
            "string",
            "Optional parameter of `str_replace` command: ALL replaces every occurrence, FIRST the first, "
            "LAST the last. When not given, `old_str` must occur exactly once.",
            enum=list(REPLACE_MODES),
        ),
    },
    "required": ["command", "path"],
    "additionalProperties": False,
}


def tools(planes: Planes) -> list[BuiltinSpec]:
    editor = planes.editor

    async def str_replace_editor(args: dict[str, Any]) -> types.CallToolResult:
        # The schema names exactly the plane's parameters (no others are let in).
        result = await editor.run(**args)
        return json_result(editor_object(result), is_error=not result.success)

    return [ToolSpec("sandbox_str_replace_editor", DESCRIPTION, INPUT_SCHEMA, str_replace_editor)]
