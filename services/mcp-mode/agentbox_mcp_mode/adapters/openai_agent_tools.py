"""The built-in agent's tools on its workspace: ``shell``, ``read_file``, ``write_file``, ``edit``
(exact string replacement) and ``list``.

File paths are relative to the run's workspace (absolute paths must point inside it) and are
checked after symlinks are resolved, so the model cannot wander off by accident; ``shell`` runs
``bash -c`` in the workspace in its own process group with the sandbox environment, and is killed
(group and all) when it times out or the run is cancelled. Every failure is returned to the model
as text starting ``error:`` so it can correct itself; nothing here raises into the agent loop.
File I/O runs in worker threads to keep the event loop free.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from agentbox_common.processes import spawn_sandboxed, terminate_process_group

#: Longest tool output handed back to the model (the middle is elided).
MAX_OUTPUT_CHARS = 30_000
DEFAULT_SHELL_TIMEOUT = 120.0


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "Path relative to the workspace"}

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    _function(
        "shell",
        "Run a bash command in the workspace; returns the exit code and combined stdout/stderr.",
        {
            "command": {"type": "string"},
            "timeout": {"type": "number", "description": "Seconds (default 120)"},
        },
        ["command"],
    ),
    _function("read_file", "Read a text file.", {"path": _PATH}, ["path"]),
    _function(
        "write_file",
        "Create or overwrite a file (parent directories are created).",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _function(
        "edit",
        "Replace one exact occurrence of old_str with new_str in a file; old_str must occur exactly once.",
        {"path": _PATH, "old_str": {"type": "string"}, "new_str": {"type": "string"}},
        ["path", "old_str", "new_str"],
    ),
    _function(
        "list",
        "List a directory (default: the workspace); directories end with '/'.",
        {"path": {**_PATH, "default": "."}},
        [],
    ),
]


class ToolFailure(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - limit} characters elided] …\n{text[-half:]}"


class AgentTools:
    """Executes tool calls for one run in ``cwd``; ``remaining`` gives the seconds left in the run."""

    def __init__(self, cwd: Path, remaining: Callable[[], float | None]) -> None:
        self.cwd = cwd.resolve()
        self.remaining = remaining

    async def call(self, name: str, raw_arguments: Any) -> str:
        try:
            arguments = json.loads(raw_arguments or "{}") if isinstance(raw_arguments, str) else raw_arguments
        except ValueError as exc:
            return f"error: arguments are not valid JSON: {exc}"
        if not isinstance(arguments, dict):
            return "error: arguments must be a JSON object"
        handler = getattr(self, f"_tool_{name}", None)
        if handler is None:
            return f"error: unknown tool {name!r}; available: shell, read_file, write_file, edit, list"
        try:
            return clip(await handler(arguments))
        except ToolFailure as exc:
            return f"error: {exc}"
        except (KeyError, TypeError) as exc:
            return f"error: bad arguments for {name}: {exc}"
        except OSError as exc:
            return f"error: {exc.strerror or exc}"

    def _path(self, arguments: dict[str, Any], key: str = "path", default: str | None = None) -> Path:
        raw = arguments.get(key, default)
        if not isinstance(raw, str) or not raw:
            raise ToolFailure(f"{key} is required")
        candidate = Path(raw) if raw.startswith("/") else self.cwd / raw
        try:
            resolved = candidate.resolve()
        except (OSError, ValueError, RuntimeError) as exc:
            raise ToolFailure(f"invalid path {raw!r}: {exc}") from None
        if resolved != self.cwd and self.cwd not in resolved.parents:
            raise ToolFailure(f"path is outside the workspace: {raw!r}")
        return resolved

    async def _tool_shell(self, arguments: dict[str, Any]) -> str:
        command = arguments["command"]
        if not isinstance(command, str) or not command.strip():
            raise ToolFailure("command is required")
        timeout = float(arguments.get("timeout") or DEFAULT_SHELL_TIMEOUT)
        left = self.remaining()
        if left is not None:
            timeout = min(timeout, max(left, 0.1))
        shell = shutil.which("bash") or "/bin/sh"
        process = await spawn_sandboxed(shell, "-c", command, cwd=self.cwd, stderr=asyncio.subprocess.STDOUT)
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            await terminate_process_group(process, grace=0.5)
            return f"error: command timed out after {timeout:g}s and was killed"
        except BaseException:
            with anyio.CancelScope(shield=True):
                await terminate_process_group(process, grace=0.5)
            raise
        return f"exit code: {process.returncode}\n{output.decode(errors='replace')}"

    async def _tool_read_file(self, arguments: dict[str, Any]) -> str:
        path = self._path(arguments)
        if not path.is_file():
            raise ToolFailure(f"not a file: {arguments['path']!r}")
        return await anyio.to_thread.run_sync(lambda: path.read_bytes().decode(errors="replace"))

    async def _tool_write_file(self, arguments: dict[str, Any]) -> str:
        path, content = self._path(arguments), arguments["content"]
        if not isinstance(content, str):
            raise ToolFailure("content must be a string")
        if path.is_dir():
            raise ToolFailure(f"is a directory: {arguments['path']!r}")

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(content)

        await anyio.to_thread.run_sync(write)
        return f"wrote {len(content)} characters to {arguments['path']}"

    async def _tool_edit(self, arguments: dict[str, Any]) -> str:
        path, old, new = self._path(arguments), arguments["old_str"], arguments["new_str"]
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise ToolFailure("old_str must be a non-empty string and new_str a string")
        if not path.is_file():
            raise ToolFailure(f"not a file: {arguments['path']!r}")

        def edit() -> str:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            count = text.count(old)
            if count != 1:
                raise ToolFailure(f"old_str occurs {count} times in {arguments['path']}; it must occur exactly once")
            path.write_text(text.replace(old, new, 1), encoding="utf-8", errors="surrogateescape")
            return f"edited {arguments['path']}"

        return await anyio.to_thread.run_sync(edit)

    async def _tool_list(self, arguments: dict[str, Any]) -> str:
        path = self._path(arguments, default=".")
        if not path.is_dir():
            raise ToolFailure(f"not a directory: {arguments.get('path', '.')!r}")

        def listing() -> str:
            names = sorted(f"{entry.name}/" if entry.is_dir() else entry.name for entry in path.iterdir())
            return "\n".join(names) or "(empty)"

        return await anyio.to_thread.run_sync(listing)
