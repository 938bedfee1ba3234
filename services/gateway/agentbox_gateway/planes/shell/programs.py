"""Programs run as they are: an argument vector executed directly (no shell between), with its own
stdin, stdout and stderr as bytes, or a terminal of its own. This is what sandboxd's ProcessService
asks for (``Start``, ``Execute``, ``WriteStdin``, ``SendSignal``, ``ResizeTTY``).

A program runs as every sandbox command does: as the gateway's (the sandbox's) user, with the
sandbox's key-free environment plus what the request adds, in a new session and process group of its
own, so a signal reaches everything it started. It is known by a small number (not its pid: a pid is
reused) while it runs; the number is forgotten when it ends. Running programs count against the same
limit as ``/v2/commands`` (``AIO_COMMAND_MAX_RUNNING``)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import itertools
import os
import select
import signal
import struct
import termios
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from agentbox_common.processes import kill_process_group, sandbox_environment

from .errors import (
    CommandLimit,
    InvalidRequest,
    NoTerminal,
    OutputTooLarge,
    ProgramDenied,
    ProgramNotFound,
    ProgramUnavailable,
)

#: Bytes read from a program's output at a time (sandboxd's ``--stream-chunk-size``).
CHUNK_SIZE = 4096
#: The most output :meth:`Programs.execute` collects of one program (each stream), in bytes.
EXECUTE_OUTPUT_LIMIT = 64 * 1024 * 1024
#: How long output is still read after the program exited, for children that keep the pipes open.
DRAIN_GRACE = 5.0


@dataclass(frozen=True)
class ProgramRequest:
    """What to run: ``argv[0]`` found on the sandbox's ``PATH``; ``env`` added to the sandbox's
    environment; ``cwd`` an existing directory (the caller resolves it); ``terminal`` (cols, rows):
    a PTY of that size instead of pipes."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    terminal: tuple[int, int] | None = None


@dataclass(frozen=True)
class Output:
    """A chunk the program wrote (``stderr`` False: stdout, or the terminal)."""

    data: bytes
    stderr: bool = False


@dataclass(frozen=True)
class Exited:
    """The program's end: its exit status, or -1 when a signal ended it."""

    exit_code: int


@dataclass(frozen=True)
class Executed:
    exit_code: int
    stdout: bytes
    stderr: bytes


class Program:
    """One started program: its output as events (:meth:`events`), its stdin, its signals."""

    def __init__(self, number: int, process: asyncio.subprocess.Process, terminal_fd: int | None) -> None:
        self.number = number
        self.process = process
        self._terminal_fd = terminal_fd
        self._events: asyncio.Queue[Output | Exited] = asyncio.Queue()
        self.exit_code: int | None = None

    @property
    def running(self) -> bool:
        return self.exit_code is None

    async def events(self) -> AsyncIterator[Output | Exited]:
        """Its output in the order read, then one :class:`Exited`."""
        while True:
            event = await self._events.get()
            yield event
            if isinstance(event, Exited):
                return

    async def write(self, data: bytes) -> None:
        """Feed stdin (the terminal's input with a PTY)."""
        if self._terminal_fd is not None:
            await asyncio.get_running_loop().run_in_executor(None, _write_all, self._terminal_fd, data)
            return
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            raise InvalidRequest(f"process {self.number}: stdin is closed")
        stdin.write(data)
        with contextlib.suppress(ConnectionError):
            await stdin.drain()

    async def close_stdin(self) -> None:
        """End of input: the pipe is closed; a terminal gets its EOF character (``^D``)."""
        if self._terminal_fd is not None:
            await self.write(b"\x04")
            return
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the program's process group (a finished program: nothing)."""
        if self.running:
            kill_process_group(self.process.pid, sig)

    def resize(self, cols: int, rows: int) -> None:
        if self._terminal_fd is None or not self.running:
            raise NoTerminal(f"process {self.number} is completed or has no terminal")
        _set_size(self._terminal_fd, cols, rows)

    async def _pump(self, on_end: Callable[[], None]) -> None:
        """Read its output until both streams end, wait for it, then close its terminal."""
        readers = []
        if self._terminal_fd is not None:
            readers.append(asyncio.create_task(self._read_terminal(self._terminal_fd)))
        else:
            assert self.process.stdout is not None and self.process.stderr is not None
            readers.append(asyncio.create_task(self._read_pipe(self.process.stdout, stderr=False)))
            readers.append(asyncio.create_task(self._read_pipe(self.process.stderr, stderr=True)))
        try:
            returncode = await self.process.wait()
            # Output written before the exit is still in the pipes; a child left running that holds
            # them open must not hold the end back for ever.
            _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
            for reader in pending:
                reader.cancel()
            self.exit_code = returncode if returncode >= 0 else -1
        finally:
            for reader in readers:
                reader.cancel()
            if self._terminal_fd is not None:
                with contextlib.suppress(OSError):
                    asyncio.get_running_loop().remove_reader(self._terminal_fd)
                os.close(self._terminal_fd)
                self._terminal_fd = None
            on_end()
            self._events.put_nowait(Exited(self.exit_code if self.exit_code is not None else -1))

    async def _read_pipe(self, stream: asyncio.StreamReader, *, stderr: bool) -> None:
        while chunk := await stream.read(CHUNK_SIZE):
            self._events.put_nowait(Output(chunk, stderr))

    async def _read_terminal(self, fd: int) -> None:
        """The terminal's output until the last process holding it goes (EIO)."""
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(fd, readable.set)
        try:
            while True:
                await readable.wait()
                readable.clear()
                try:
                    chunk = os.read(fd, CHUNK_SIZE)
                except BlockingIOError:
                    continue
                except OSError:  # EIO: no process has the terminal open any more
                    return
                if not chunk:
                    return
                self._events.put_nowait(Output(chunk))
        finally:
            with contextlib.suppress(OSError, ValueError):
                loop.remove_reader(fd)


class Programs:
    """The programs started and still running, by number; bounded by ``limit`` together with
    whatever else counts against it (``others_running``)."""

    def __init__(self, limit: int, others_running: Callable[[], int] = lambda: 0) -> None:
        self.limit = limit
        self._others_running = others_running
        self._running: dict[int, Program] = {}
        self._numbers = itertools.count(1)
        self._starting = 0
        self._pumps: set[asyncio.Task[None]] = set()

    @property
    def running(self) -> int:
        return len(self._running) + self._starting

    async def start(self, request: ProgramRequest) -> Program:
        """Start ``request``'s program; its events begin with its output (the caller reads them)."""
        if not request.argv or not request.argv[0]:
            raise InvalidRequest("command is required")
        if any("\0" in arg for arg in request.argv):
            raise InvalidRequest("an argument contains a NUL character")
        for name, value in request.env.items():
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise InvalidRequest(f"invalid environment variable: {name!r}")
        if request.terminal is not None and (request.terminal[0] > 0xFFFF or request.terminal[1] > 0xFFFF):
            raise InvalidRequest("terminal size out of range")
        if self.running + self._others_running() >= self.limit:
            raise CommandLimit(
                f"too many commands running (limit {self.limit}): wait for one to end, or kill one",
                hint="AIO_COMMAND_MAX_RUNNING sets the limit",
            )
        self._starting += 1
        try:
            process, terminal_fd = await _spawn(request)
        finally:
            self._starting -= 1
        number = next(self._numbers)
        program = Program(number, process, terminal_fd)
        self._running[number] = program
        pump = asyncio.get_running_loop().create_task(program._pump(lambda: self._forget(number)))
        self._pumps.add(pump)
        pump.add_done_callback(self._pumps.discard)
        return program

    async def execute(self, request: ProgramRequest, limit: int = EXECUTE_OUTPUT_LIMIT) -> Executed:
        """Run ``request`` to its end and return all it wrote (each stream at most ``limit`` bytes:
        past that it is killed and :class:`~.errors.OutputTooLarge` raised). Cancelled (a caller
        gone, a deadline passed), the program's whole group is killed."""
        program = await self.start(request)
        out, err = bytearray(), bytearray()
        try:
            async for event in program.events():
                if isinstance(event, Exited):
                    return Executed(event.exit_code, bytes(out), bytes(err))
                buffer = err if event.stderr else out
                buffer += event.data
                if len(buffer) > limit:
                    raise OutputTooLarge(
                        f"the command wrote more than {limit // (1024 * 1024)} MiB to one stream; "
                        "run it with Start to stream its output"
                    )
        finally:
            program.signal(signal.SIGKILL)
        raise AssertionError("unreachable: events end with Exited")

    def _forget(self, number: int) -> None:
        self._running.pop(number, None)

    def get(self, number: int) -> Program:
        program = self._running.get(number)
        if program is None:
            raise ProgramNotFound(f"process {number} not found")
        return program

    async def aclose(self) -> None:
        """Stop every running program (SIGTERM, then SIGKILL after a grace) and wait for the ends."""
        for program in list(self._running.values()):
            program.signal(signal.SIGTERM)
        if self._pumps:
            _, pending = await asyncio.wait(set(self._pumps), timeout=2.0)
            for program in list(self._running.values()):
                program.signal(signal.SIGKILL)
            if pending:
                await asyncio.wait(pending, timeout=2.0)


async def _spawn(request: ProgramRequest) -> tuple[asyncio.subprocess.Process, int | None]:
    env = sandbox_environment(extra=request.env)
    try:
        if request.terminal is None:
            process = await asyncio.create_subprocess_exec(
                *request.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=request.cwd,
                start_new_session=True,
            )
            return process, None
        master, slave = os.openpty()
        try:
            os.set_blocking(master, False)
            cols, rows = request.terminal
            if cols and rows:
                _set_size(master, cols, rows)
            process = await asyncio.create_subprocess_exec(
                *request.argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env={"TERM": "xterm-256color", **env},
                cwd=request.cwd,
                preexec_fn=functools.partial(_take_terminal, slave),
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return process, master
    except FileNotFoundError as exc:
        raise ProgramNotFound(f"command or path not found: {exc.filename or request.argv[0]}") from None
    except PermissionError as exc:
        raise ProgramDenied(f"permission denied: {exc.filename or request.argv[0]}") from None
    except OSError as exc:
        raise ProgramUnavailable(f"cannot start {request.argv[0]}: {exc.strerror or exc}") from None


def _take_terminal(terminal: int) -> None:
    """``preexec_fn``: a new session whose controlling terminal is the PTY. By its descriptor, not
    fd 0: uvloop calls this before it moves the child's stdio in place."""
    os.setsid()
    fcntl.ioctl(terminal, termios.TIOCSCTTY, 0)


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
