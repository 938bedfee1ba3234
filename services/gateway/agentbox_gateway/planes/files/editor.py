"""The ``str_replace_editor`` plane: Anthropic's text-editor tool (view, create, str_replace, insert,
undo_edit) over the file plane, with an in-memory undo history per path.

It follows Anthropic's reference tool (its messages, ``cat -n`` layout, 4-line snippets, ``create``
refusing to overwrite) with three deliberate differences: tabs are never expanded (the reference
rewrote every tab in a file it edited, which breaks Makefiles), a file's final newline is not shown
as an extra empty numbered line, and undoing a ``create`` removes the file instead of rewriting it."""

from __future__ import annotations

import contextlib
import os
import stat
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import anyio
import anyio.to_thread

from agentbox_common.errors import Invalid

from .errors import FileOperationError
from .operations import FilePlane
from .tree import ScanBudget, walk_tree

COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
REPLACE_MODES = ("ALL", "FIRST", "LAST")
SNIPPET_LINES = 4
MAX_RESPONSE_LEN = 16000
TRUNCATED_MESSAGE = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should "
    "retry this tool after you have searched inside the file with `grep -n` in order to find the line "
    "numbers of what you are looking for.</NOTE>"
)
#: Undo depth per file and how many files keep a history (oldest forgotten first).
HISTORY_DEPTH = 10
HISTORY_FILES = 256
#: A directory ``view`` looks at this many entries at most.
VIEW_DIRECTORY_LIMIT = 5000


class EditorError(Invalid):
    """The command was understood and refused; the message is what the model reads. :meth:`run`
    answers it as a result with ``error`` set, so it never reaches a door."""


@dataclass(frozen=True)
class EditorResult:
    """One command's outcome, with the fields of AIO 1.x's ``StrReplaceEditorResult``; a refused
    command has ``error`` set (and ``success`` false)."""

    command: str
    path: str
    output: str = ""
    prev_exist: bool = False
    error: str | None = None
    old_content: str | None = None
    new_content: str | None = None

    @property
    def success(self) -> bool:
        return self.error is None


class _Change(NamedTuple):
    """What a command that went through did: the text the model reads, the content before and after."""

    output: str
    old_content: str | None = None
    new_content: str | None = None


def _kind(path: str) -> str | None:
    """``file``, ``directory``, ``other`` or None when nothing is there."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError:
        return "other" if os.path.lexists(path) else None
    if stat.S_ISDIR(mode):
        return "directory"
    return "file" if stat.S_ISREG(mode) else "other"


def _lines(text: str) -> list[str]:
    """Lines without terminators; a final newline ends the last line rather than starting a new one."""
    if text == "":
        return []
    return (text[:-1] if text.endswith("\n") else text).split("\n")


def _truncate(text: str) -> str:
    return text if len(text) <= MAX_RESPONSE_LEN else text[:MAX_RESPONSE_LEN] + TRUNCATED_MESSAGE


def make_output(lines: Sequence[str], descriptor: str, init_line: int = 1) -> str:
    """``cat -n`` layout: the number right-aligned in 6 columns, a tab, the line."""
    numbered = "\n".join(f"{number:6}\t{line}" for number, line in enumerate(lines, start=init_line))
    return f"Here's the result of running `cat -n` on {descriptor}:\n{_truncate(numbered)}\n"


def _directory_listing(path: str) -> str:
    """Non-hidden files and directories up to 2 levels deep (as ``find -maxdepth 2``), dirs with ``/``."""
    budget = ScanBudget(VIEW_DIRECTORY_LIMIT)
    found = [
        entry.path + ("/" if entry.is_dir() else "")
        for entry, _relative, _depth in walk_tree(path, budget, include_hidden=False, max_depth=2)
    ]
    items = [path, *sorted(found)]
    if budget.exhausted:
        items.append(f"... (stopped after {VIEW_DIRECTORY_LIMIT} entries)")
    return "\n".join(items)


def _check_target(command: str, path: str, kind: str | None) -> None:
    """Refuse the path/command combinations the reference tool refuses."""
    if kind is None and command != "create":
        raise EditorError(f"The path {path} does not exist. Please provide a valid path.")
    if kind is not None and command == "create":
        raise EditorError(f"File already exists at: {path}. Cannot overwrite files using command `create`.")
    if kind == "directory" and command != "view":
        raise EditorError(f"The path {path} is a directory and only the `view` command can be used on directories")


def _remove(path: str) -> None:
    os.unlink(path)


class EditorPlane:
    """One editor shared by every client; edits are serialised so undo history stays coherent."""

    def __init__(self, files: FilePlane) -> None:
        self.files = files
        self._history: OrderedDict[str, deque[str | None]] = OrderedDict()
        self._lock = anyio.Lock()

    async def aclose(self) -> None:
        self._history.clear()

    async def run(
        self,
        command: str,
        path: str,
        *,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: Sequence[int] | None = None,
        replace_mode: str | None = None,
    ) -> EditorResult:
        """Run one command; refusals come back as a result with ``error`` set, never as an exception."""
        result = EditorResult(command=command, path=path)
        try:
            if command not in COMMANDS:
                raise EditorError(
                    f"Unrecognized command {command}. The allowed commands for the str_replace_editor tool "
                    f"are: {', '.join(COMMANDS)}"
                )
            if not path.startswith("/"):
                raise EditorError(
                    f"The path {path} is not an absolute path, it should start with `/`. "
                    f"Maybe you meant /{path.lstrip('./')}?"
                )
            # Edits are serialised (one undo history); a view reads without waiting for them.
            async with contextlib.nullcontext() if command == "view" else self._lock:
                kind = await anyio.to_thread.run_sync(_kind, path)
                result = replace(result, prev_exist=kind is not None)
                _check_target(command, path, kind)
                if command == "view":
                    change = _Change(await self._view(path, kind, view_range))
                elif command == "create":
                    change = await self._create(path, file_text)
                elif command == "str_replace":
                    change = await self._str_replace(path, old_str, new_str, replace_mode)
                elif command == "insert":
                    change = await self._insert(path, insert_line, new_str)
                else:
                    change = await self._undo(path)
        except EditorError as exc:
            return replace(result, error=str(exc))
        except FileOperationError as exc:
            return replace(result, error=exc.message)
        return replace(result, **change._asdict())

    def _remember(self, path: str, previous: str | None) -> None:
        history = self._history.pop(path, None) or deque(maxlen=HISTORY_DEPTH)
        history.append(previous)
        self._history[path] = history
        while len(self._history) > HISTORY_FILES:
            self._history.popitem(last=False)

    async def _view(self, path: str, kind: str | None, view_range: Sequence[int] | None) -> str:
        if kind == "directory":
            if view_range:
                raise EditorError("The `view_range` parameter is not allowed when `path` points to a directory.")
            listing = await anyio.to_thread.run_sync(_directory_listing, path)
            return (
                f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden items:\n{listing}\n"
            )
        lines = _lines(await self.files.read_text(path))
        init_line = 1
        if view_range:
            if len(view_range) != 2 or not all(isinstance(i, int) for i in view_range):
                raise EditorError("Invalid `view_range`. It should be a list of two integers.")
            init_line, final_line = view_range
            count = len(lines)
            if init_line < 1 or init_line > max(count, 1):
                raise EditorError(
                    f"Invalid `view_range`: {list(view_range)}. Its first element `{init_line}` should be "
                    f"within the range of lines of the file: {[1, count]}"
                )
            if final_line > count:
                raise EditorError(
                    f"Invalid `view_range`: {list(view_range)}. Its second element `{final_line}` should be "
                    f"smaller than the number of lines in the file: `{count}`"
                )
            if final_line != -1 and final_line < init_line:
                raise EditorError(
                    f"Invalid `view_range`: {list(view_range)}. Its second element `{final_line}` should be "
                    f"larger or equal than its first `{init_line}`"
                )
            lines = lines[init_line - 1 :] if final_line == -1 else lines[init_line - 1 : final_line]
        return make_output(lines, path, init_line)

    async def _create(self, path: str, file_text: str | None) -> _Change:
        if file_text is None:
            raise EditorError("Parameter `file_text` is required for command: create")
        await self.files.write_text(path, file_text)
        self._remember(path, None)
        return _Change(f"File created successfully at: {path}", new_content=file_text)

    async def _str_replace(
        self, path: str, old_str: str | None, new_str: str | None, replace_mode: str | None
    ) -> _Change:
        if old_str is None:
            raise EditorError("Parameter `old_str` is required for command: str_replace")
        if old_str == "":
            raise EditorError("Parameter `old_str` must not be empty; use `insert` to add text.")
        if replace_mode is not None and replace_mode not in REPLACE_MODES:
            raise EditorError(f"Invalid `replace_mode`: {replace_mode}. Use one of {', '.join(REPLACE_MODES)}.")
        new_str = new_str or ""
        content = await self.files.read_text(path)
        starts = _occurrences(content, old_str)
        if not starts:
            raise EditorError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}.")
        if len(starts) > 1 and replace_mode is None:
            lines = [content.count("\n", 0, start) + 1 for start in starts]
            raise EditorError(
                "No replacement was performed. Multiple occurrences of old_str "
                f"`{old_str}` in lines {lines}. "
                "Please ensure it is unique (or set `replace_mode` to ALL, FIRST or LAST)"
            )
        if replace_mode == "ALL":
            updated, first = content.replace(old_str, new_str), starts[0]
        else:
            first = starts[-1] if replace_mode == "LAST" else starts[0]
            updated = content[:first] + new_str + content[first + len(old_str) :]
        await self.files.write_text(path, updated)
        self._remember(path, content)
        replacement_line = content.count("\n", 0, first)
        start_line = max(0, replacement_line - SNIPPET_LINES)
        end_line = replacement_line + SNIPPET_LINES + new_str.count("\n")
        snippet = _lines(updated)[start_line : end_line + 1]
        output = (
            f"The file {path} has been edited. "
            + make_output(snippet, f"a snippet of {path}", start_line + 1)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )
        return _Change(output, content, updated)

    async def _insert(self, path: str, insert_line: int | None, new_str: str | None) -> _Change:
        if insert_line is None:
            raise EditorError("Parameter `insert_line` is required for command: insert")
        if new_str is None:
            raise EditorError("Parameter `new_str` is required for command: insert")
        content = await self.files.read_text(path)
        lines = _lines(content)
        if insert_line < 0 or insert_line > len(lines):
            raise EditorError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of "
                f"the file: {[0, len(lines)]}"
            )
        new_lines = _lines(new_str) if new_str else [""]
        updated_lines = lines[:insert_line] + new_lines + lines[insert_line:]
        final_newline = content.endswith("\n") or (content == "" and new_str.endswith("\n"))
        updated = "\n".join(updated_lines) + ("\n" if final_newline else "")
        await self.files.write_text(path, updated)
        self._remember(path, content)
        snippet = (
            lines[max(0, insert_line - SNIPPET_LINES) : insert_line]
            + new_lines
            + lines[insert_line : insert_line + SNIPPET_LINES]
        )
        output = (
            f"The file {path} has been edited. "
            + make_output(snippet, "a snippet of the edited file", max(1, insert_line - SNIPPET_LINES + 1))
            + "Review the changes and make sure they are as expected (correct indentation, no duplicate "
            "lines, etc). Edit the file again if necessary."
        )
        return _Change(output, content, updated)

    async def _undo(self, path: str) -> _Change:
        history = self._history.get(path)
        if not history:
            raise EditorError(f"No edit history found for {path}.")
        current = await self.files.read_text(path)
        previous = history[-1]
        if previous is None:
            try:
                await anyio.to_thread.run_sync(_remove, path)
            except OSError as exc:
                raise FileOperationError.from_os_error(exc, "write", path) from None
            output = f"Last edit to {path} undone successfully. The file did not exist before, so it was removed."
        else:
            await self.files.write_text(path, previous)
            output = f"Last edit to {path} undone successfully. {make_output(_lines(previous), path)}"
        history.pop()
        return _Change(output, current, previous)


def _occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of non-overlapping occurrences (as ``str.count`` and ``str.replace`` see them)."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + len(needle))
    return starts
