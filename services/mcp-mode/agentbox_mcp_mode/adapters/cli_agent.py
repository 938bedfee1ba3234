"""Shared machinery of the adapters that drive an agent CLI (Claude Code, Codex).

The binary runs with ``asyncio.create_subprocess_exec`` in its own session (so a timeout or a
client disconnect can kill the whole process group, grandchildren included), in the run's
workspace, with the service's environment minus its secrets. The prompt goes on stdin, never in
argv (argv is visible to every process and has a size limit). stdout is read line by line as
JSON events; stderr is collected for diagnostics. Nothing here blocks the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from abc import abstractmethod
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio

from agentbox_common.processes import spawn_sandboxed, terminate_process_group

from .base import MISSING_BINARY_EXIT_CODE, TIMEOUT_EXIT_CODE, Adapter, AgentEvent, AgentRequest, AgentRequestError

#: Longest stdout line accepted (stream-json lines carry whole tool results).
LINE_LIMIT = 32 * 1024 * 1024
STDERR_KEEP = 64 * 1024


class OutputParser:
    """Turns the CLI's JSON lines into events; remembers the final answer and any reported error."""

    def __init__(self) -> None:
        self.final_text = ""
        self.session_id = ""
        self.error = ""

    @abstractmethod
    def feed(self, event: dict[str, Any]) -> list[AgentEvent]:
        """Events for one decoded JSON line."""

    def session(self, session_id: Any) -> list[AgentEvent]:
        if isinstance(session_id, str) and session_id and session_id != self.session_id:
            self.session_id = session_id
            return [AgentEvent("session", session_id=session_id)]
        return []


async def _feed_stdin(stdin: asyncio.StreamWriter, data: str) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data.encode())
        await stdin.drain()
    stdin.close()


async def _collect(stream: asyncio.StreamReader) -> str:
    """Everything the stream says, keeping only the last ``STDERR_KEEP`` bytes."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        kept.extend(chunk)
        del kept[:-STDERR_KEEP]
    return kept.decode(errors="replace")


def _exit_code(returncode: int | None) -> int:
    if returncode is None:
        return 1
    return 128 - returncode if returncode < 0 else returncode  # killed by a signal: 128 + signo


class CliAdapter(Adapter):
    """An adapter running ``binary`` (``AICODEBOX_AGENT_BINARY`` or :attr:`default_binary`)."""

    default_binary: str = ""
    #: The ``thinking`` values the CLI accepts (empty: any).
    thinking_levels: tuple[str, ...] = ()

    @property
    def binary(self) -> str:
        return self.settings.agent_binary or self.default_binary

    def validate(self, request: AgentRequest) -> None:
        if request.thinking and self.thinking_levels and request.thinking not in self.thinking_levels:
            levels = ", ".join(self.thinking_levels)
            raise AgentRequestError(
                f"thinking {request.thinking!r} is not supported by {self.name}; use one of {levels}"
            )

    @abstractmethod
    def build_argv(self, request: AgentRequest, scratch: Path) -> list[str]:
        """The command line; ``scratch`` is a private temporary directory for this run."""

    @abstractmethod
    def parser(self) -> OutputParser:
        """A fresh parser for one run's output."""

    async def stream(self, request: AgentRequest) -> AsyncGenerator[AgentEvent, None]:
        self.validate(request)
        loop = asyncio.get_running_loop()
        deadline = None if request.timeout is None else loop.time() + request.timeout
        with tempfile.TemporaryDirectory(prefix="agentbox-run-") as scratch:
            argv = self.build_argv(request, Path(scratch))
            try:
                process = await spawn_sandboxed(*argv, cwd=request.cwd, stdin=asyncio.subprocess.PIPE, limit=LINE_LIMIT)
            except FileNotFoundError as exc:
                missing_cwd = exc.filename is not None and Path(exc.filename) == Path(request.cwd)
                yield AgentEvent(
                    "stop",
                    reason="error",
                    exit_code=MISSING_BINARY_EXIT_CODE,
                    stderr=f"workspace not found: {request.cwd}" if missing_cwd else f"binary not found: {argv[0]}",
                )
                return
            except PermissionError:
                yield AgentEvent("stop", reason="error", exit_code=126, stderr=f"binary not executable: {argv[0]}")
                return
            assert process.stdin and process.stdout and process.stderr
            stdin_task = asyncio.create_task(_feed_stdin(process.stdin, request.prompt))
            stderr_task = asyncio.create_task(_collect(process.stderr))
            parser = self.parser()
            timed_out = False
            try:
                while True:
                    remaining = None if deadline is None else deadline - loop.time()
                    try:
                        line = await asyncio.wait_for(process.stdout.readline(), remaining)
                    except TimeoutError:
                        timed_out = True
                        break
                    except ValueError:  # a line over LINE_LIMIT: skipped, the run goes on
                        continue
                    if not line:
                        break
                    for event in self._decode(parser, line):
                        yield event
                if not timed_out:
                    remaining = None if deadline is None else max(deadline - loop.time(), 0)
                    try:
                        await asyncio.wait_for(process.wait(), remaining)
                    except TimeoutError:
                        timed_out = True
            except BaseException:  # cancellation (client disconnect) or a consumer that left early
                with anyio.CancelScope(shield=True):
                    await terminate_process_group(process)
                stdin_task.cancel()
                stderr_task.cancel()
                raise
            if timed_out:
                await terminate_process_group(process)
            stdin_task.cancel()
            stderr = ""
            with contextlib.suppress(TimeoutError):
                stderr = await asyncio.wait_for(stderr_task, 2)
            if timed_out:
                stderr = f"{stderr}\ntimeout after {request.timeout:g}s".lstrip()
                yield AgentEvent(
                    "stop",
                    text=parser.final_text,
                    reason="timeout",
                    exit_code=TIMEOUT_EXIT_CODE,
                    stderr=stderr,
                    session_id=parser.session_id,
                )
                return
            exit_code = _exit_code(process.returncode)
            if parser.error:
                stderr = f"{parser.error}\n{stderr}".strip()
            failed = exit_code != 0 or bool(parser.error)
            yield AgentEvent(
                "stop",
                text=parser.final_text,
                reason="error" if failed else "stop",
                exit_code=exit_code,
                stderr=stderr,
                session_id=parser.session_id,
            )

    @staticmethod
    def _decode(parser: OutputParser, line: bytes) -> list[AgentEvent]:
        try:
            event = json.loads(line)
        except ValueError:
            return []  # banners and other non-JSON chatter
        return parser.feed(event) if isinstance(event, dict) else []
