"""Commands as resources (``/v2/commands``): a command runs on its own (in a shell of its own that
ends with it) or in a named session, and is kept by id while it runs and, once finished, for a
bounded time and size, so its output can be read by offset after the request that started it.

A command here is the same object ``sandbox_execute_bash`` and ``/v1/bash`` run: a
:class:`~.record.CommandRecord` in a :class:`~.session.ShellSession`, with its timeouts, stdin and
kills. The registry adds the ids, the limit on running commands and the retention of finished ones."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .bash import bash_quote
from .errors import CommandLimit, CommandNotFound, InvalidRequest
from .record import CommandRecord
from .session import ShellSession

if TYPE_CHECKING:
    from .plane import ShellPlane

Shell = Literal["bash", "sh", "none"]
SHELLS: tuple[Shell, ...] = ("bash", "sh", "none")
#: Characters a finished command counts for besides its output, so many silent commands are bounded too.
RECORD_OVERHEAD = 1024


@dataclass(frozen=True)
class CommandRequest:
    """What to run. ``shell``: ``bash`` (``args`` are ``$1``...), ``sh`` (``sh -c command sh
    args...``) or ``none`` (``command`` is a program run with ``args``, nothing is interpreted).
    ``stdin``: a pipe that :meth:`Commands.write` feeds, instead of ``/dev/null``. Without
    ``session_id`` the command gets a shell of its own."""

    command: str
    shell: Shell = "bash"
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    hard_timeout: float | None = None
    session_id: str | None = None
    stdin: bool = False


@dataclass(frozen=True)
class CommandLimits:
    #: Commands running at once (one more is :class:`CommandLimit`).
    max_running: int = 32
    #: How long a finished command stays readable (seconds).
    retain_seconds: float = 600.0
    #: Characters of output kept of finished commands in all; the oldest go first past it.
    retain_chars: int = 64_000_000


@dataclass
class Command:
    """One command of the registry: how it was asked for, its record and the session it runs in."""

    request: CommandRequest
    record: CommandRecord
    session: ShellSession
    #: The named session it runs in; ``None`` for one run in a shell of its own.
    session_id: str | None

    @property
    def command_id(self) -> str:
        return self.record.command_id


def invocation(request: CommandRequest) -> str | None:
    """The shell text that runs ``request`` (``None``: its command as it stands)."""
    quoted = " ".join(bash_quote(arg) for arg in request.args)
    if request.shell == "bash":
        return f"set -- {quoted}\n{request.command}" if request.args else None
    if request.shell == "sh":
        return f"sh -c {bash_quote(request.command)} sh {quoted}".rstrip()
    # A subshell that becomes the program: no function, alias or builtin of that name is used.
    return f"(builtin exec -- {bash_quote(request.command)} {quoted})"


class Commands:
    """The commands started by id: running ones, and finished ones for a bounded time and size."""

    def __init__(self, plane: ShellPlane, limits: CommandLimits) -> None:
        self._plane = plane
        self.limits = limits
        self._commands: dict[str, Command] = {}
        #: Finished commands in the order they ended: when, and what they count for.
        self._finished: OrderedDict[str, tuple[float, int]] = OrderedDict()
        #: Commands started and not yet retired: running, or just ended.
        self._running: dict[str, Command] = {}
        self._retained = 0
        self._starting = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        """Commands running or starting: one that has ended counts no more, even before it is retired."""
        return sum(not command.record.done for command in self._running.values()) + self._starting

    async def start(self, request: CommandRequest) -> Command:
        """Start ``request`` and return it at once (``command.record.wait()`` for the end)."""
        if not request.command.strip():
            raise InvalidRequest("command must not be empty")
        if request.shell not in SHELLS:
            raise InvalidRequest(f"unknown shell {request.shell!r}: use one of {', '.join(SHELLS)}")
        if request.hard_timeout is not None and request.hard_timeout <= 0:
            raise InvalidRequest("hard_timeout must be a positive number of seconds")
        if any("\0" in arg for arg in request.args):
            raise InvalidRequest("an argument contains a NUL character")
        self._prune()
        if self.running >= self.limits.max_running:
            raise CommandLimit(
                f"too many commands running (limit {self.limits.max_running}): wait for one to end, or kill one",
                hint="AIO_COMMAND_MAX_RUNNING sets the limit",
            )
        self._starting += 1  # counted from here: concurrent starts cannot pass the limit
        own = request.session_id is None
        try:
            if own:
                session = await self._plane.own_shell(f"command-{secrets.token_hex(6)}")
            else:
                session = await self._plane.session(request.session_id or "")
            try:
                record = await session.start(
                    request.command,
                    cwd=request.cwd,
                    env=dict(request.env),
                    merged=False,
                    interactive=request.stdin,
                    hard_timeout=request.hard_timeout,
                    run=invocation(request),
                )
            except BaseException:
                if own:
                    await session.close(kill_jobs=True)
                raise
        finally:
            self._starting -= 1
        command = Command(request, record, session, None if own else session.session_id)
        self._commands[record.command_id] = command
        self._running[record.command_id] = command
        task = asyncio.get_running_loop().create_task(self._retire(command, own))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return command

    async def _retire(self, command: Command, own: bool) -> None:
        """Once the command ends: close its own shell (its background jobs are left to run, as when
        an idle session is evicted) and count it among the finished."""
        await command.record.finished.wait()
        try:
            if own:
                await command.session.close(kill_jobs=False)
        finally:
            self._running.pop(command.command_id, None)  # gone already if the registry was closed
        size = command.record.retained + RECORD_OVERHEAD
        self._finished[command.command_id] = (time.monotonic(), size)
        self._retained += size
        self._prune()

    def _prune(self) -> None:
        now = time.monotonic()
        while self._finished:
            command_id, (ended, size) = next(iter(self._finished.items()))
            if now - ended <= self.limits.retain_seconds and self._retained <= self.limits.retain_chars:
                return
            del self._finished[command_id]
            self._retained -= size
            self._commands.pop(command_id, None)

    def get(self, command_id: str) -> Command:
        self._prune()
        command = self._commands.get(command_id)
        if command is None:
            raise CommandNotFound(
                f"unknown command {command_id!r}: never started, or finished and no longer kept",
                hint=f"finished commands are kept {self.limits.retain_seconds:g} s, and only the newest "
                "output up to AIO_COMMAND_RETAIN_CHARS",
            )
        return command

    def list(self) -> list[Command]:
        self._prune()
        return list(self._commands.values())

    async def write(self, command_id: str, text: str, *, eof: bool = False) -> Command:
        """Feed the command's stdin; ``eof`` closes it afterwards."""
        command = self.get(command_id)
        await command.session.write(text + ("\x04" if eof else ""), command_id)
        return command

    async def kill(self, command_id: str, sig: int) -> Command:
        """Send ``sig`` to what the command runs (SIGKILL: everything it started); a finished one is
        left as it ended."""
        command = self.get(command_id)
        if not command.record.done:
            await command.session.send_signal(sig)
        return command

    async def aclose(self) -> None:
        """Close the shells of the commands still running on their own (named sessions are the
        plane's to close)."""
        for task in list(self._tasks):
            task.cancel()
        for command in list(self._commands.values()):
            if command.session_id is None and not command.session.closed:
                await command.session.close(kill_jobs=True)
        self._commands.clear()
        self._running.clear()
        self._finished.clear()
        self._retained = 0
