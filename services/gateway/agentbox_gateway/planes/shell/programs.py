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
import subprocess
import termios
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from agentbox_common.processes import kill_process_group, sandbox_environment

from .errors import (
    CommandLimit,
    InvalidRequest,
    NoTerminal,
    OutputTooLarge,
    ProgramDenied,
    ProgramNotFound,
    ProgramUnavailable,
    StdinClosed,
)

#: Bytes read from a program's output at a time (sandboxd's ``--stream-chunk-size``).
CHUNK_SIZE = 4096
#: The most output :meth:`Programs.execute` collects of one program (each stream), in bytes.
EXECUTE_OUTPUT_LIMIT = 64 * 1024 * 1024
#: Bytes of a program's output the gateway holds for a slow reader (a ``Start`` stream's client).
QUEUED_LIMIT = 1024 * 1024
#: How long output is still read after the program exited, for children that keep the pipes open.
DRAIN_GRACE = 5.0
#: How often a program's end is looked for where the kernel has no pidfd.
PID_POLL_INTERVAL = 0.02


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

    def __init__(self, number: int, spawned: Spawned) -> None:
        self.number = number
        self.process = spawned.process
        self._outputs = spawned.outputs
        self._stdin = spawned.stdin
        self._terminal = spawned.terminal
        self._events: asyncio.Queue[Output | Exited] = asyncio.Queue()
        #: Output read and not yet taken by :meth:`events`; past :data:`QUEUED_LIMIT` the readers wait,
        #: the pipes fill and the program blocks, as on a terminal nobody reads.
        self._queued = 0
        self._drained = asyncio.Event()
        #: Nobody reads its output any more (:meth:`abandon`): the readers no longer wait.
        self._abandoned = False
        self.exit_code: int | None = None

    @property
    def running(self) -> bool:
        return self.exit_code is None

    async def events(self) -> AsyncIterator[Output | Exited]:
        """Its output in the order read, then one :class:`Exited`."""
        while True:
            event = await self._events.get()
            if isinstance(event, Output):
                self._queued -= len(event.data)
                if self._queued <= QUEUED_LIMIT:
                    self._drained.set()
            yield event
            if isinstance(event, Exited):
                return

    async def write(self, data: bytes) -> None:
        """Feed stdin (the terminal's input with a PTY)."""
        fd = self._stdin
        if fd is None:
            raise StdinClosed(f"process {self.number}: stdin is closed")
        try:
            await anyio.to_thread.run_sync(_write_all, fd, data)
        except (BrokenPipeError, OSError):  # its reader gone, or the descriptor closed as it ended
            raise StdinClosed(f"process {self.number} no longer reads its stdin") from None

    async def close_stdin(self) -> None:
        """End of input: the pipe is closed; a terminal gets its EOF character (``^D``)."""
        if self._terminal is not None:
            await self.write(b"\x04")
        elif self._stdin is not None:
            os.close(self._stdin)
            self._stdin = None

    @property
    def _backlogged(self) -> bool:
        return self._queued > QUEUED_LIMIT and not self._abandoned

    def abandon(self) -> None:
        """Its reader is gone: output is no longer held back for one (kill it too, or it runs on)."""
        self._abandoned = True
        self._drained.set()

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the program's process group (a finished program: nothing)."""
        if self.running:
            kill_process_group(self.process.pid, sig)

    def resize(self, cols: int, rows: int) -> None:
        if self._terminal is None or not self.running:
            raise NoTerminal(f"process {self.number} is completed or has no terminal")
        _set_size(self._terminal, cols, rows)

    async def _pump(self, on_end: Callable[[], None]) -> None:
        """Read its output until each stream ends, wait for its exit, then close what it held."""
        readers = [asyncio.create_task(self._read(fd, stderr)) for fd, stderr in self._outputs]
        try:
            returncode = await _exited(self.process)
            # Output written before the exit is still in the pipes; a child left running that holds
            # them open must not hold the end back for ever (a reader still draining it may).
            while True:
                _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
                if not pending or not self._backlogged:
                    break
            for reader in pending:
                reader.cancel()
            self.exit_code = returncode if returncode >= 0 else -1
        finally:
            for reader in readers:
                reader.cancel()
            owned = {fd for fd, _ in self._outputs} | ({self._stdin} if self._stdin is not None else set())
            for fd in owned:  # a terminal's one descriptor is its output and its input
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._stdin = self._terminal = None
            on_end()
            self._events.put_nowait(Exited(self.exit_code if self.exit_code is not None else -1))

    async def _read(self, fd: int, stderr: bool) -> None:
        """One output until its end (EOF of a pipe; EIO once no process holds a terminal)."""
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
                except OSError:
                    return
                if not chunk:
                    return
                self._events.put_nowait(Output(chunk, stderr))
                self._queued += len(chunk)
                if self._backlogged:
                    loop.remove_reader(fd)  # level-triggered: it would fire on every loop turn meanwhile
                    while self._backlogged:
                        self._drained.clear()
                        await self._drained.wait()
                    loop.add_reader(fd, readable.set)
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
            spawned = await _spawn(request)
        finally:
            self._starting -= 1
        number = next(self._numbers)
        program = Program(number, spawned)
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
            program.abandon()
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
            program.abandon()
            program.signal(signal.SIGTERM)
        if self._pumps:
            _, pending = await asyncio.wait(set(self._pumps), timeout=2.0)
            for program in list(self._running.values()):
                program.signal(signal.SIGKILL)
            if pending:
                await asyncio.wait(pending, timeout=2.0)


@dataclass
class Spawned:
    """A started process and the descriptors the gateway keeps of it (non-blocking, close-on-exec)."""

    process: subprocess.Popen[bytes]
    #: What it writes: (fd, is stderr).
    outputs: list[tuple[int, bool]]
    stdin: int | None
    terminal: int | None = None


async def _spawn(request: ProgramRequest) -> Spawned:
    """Start the program with the standard library's spawn (``vfork``: cheap however large the gateway
    is; the event loop's own spawn forks, some 10 ms in the gateway), or, for a terminal, in a worker
    thread (it needs a ``preexec_fn``, so a full fork)."""
    env = sandbox_environment(extra=request.env)
    try:
        if request.terminal is None:
            return _spawn_with_pipes(request, env)
        return await anyio.to_thread.run_sync(_spawn_with_terminal, request, {"TERM": "xterm-256color", **env})
    except FileNotFoundError as exc:
        raise ProgramNotFound(f"command or path not found: {exc.filename or request.argv[0]}") from None
    except PermissionError as exc:
        raise ProgramDenied(f"permission denied: {exc.filename or request.argv[0]}") from None
    except OSError as exc:
        raise ProgramUnavailable(f"cannot start {request.argv[0]}: {exc.strerror or exc}") from None


def _popen(
    request: ProgramRequest, env: dict[str, str], stdio: tuple[int, int, int], **options: Any
) -> subprocess.Popen[bytes]:
    stdin, stdout, stderr = stdio
    return subprocess.Popen(
        request.argv, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=request.cwd, **options
    )


def _spawn_with_pipes(request: ProgramRequest, env: dict[str, str]) -> Spawned:
    stdin_read, stdin_write = os.pipe2(os.O_CLOEXEC)
    out_read, out_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    err_read, err_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    os.set_blocking(out_write, True)
    os.set_blocking(err_write, True)
    try:
        process = _popen(request, env, (stdin_read, out_write, err_write), start_new_session=True)
    except BaseException:
        for fd in (stdin_write, out_read, err_read):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_read, out_write, err_write):
            os.close(fd)
    return Spawned(process, [(out_read, False), (err_read, True)], stdin_write)


def _spawn_with_terminal(request: ProgramRequest, env: dict[str, str]) -> Spawned:
    master, slave = os.openpty()
    try:
        os.set_blocking(master, False)
        cols, rows = request.terminal or (0, 0)
        if cols and rows:
            _set_size(master, cols, rows)
        process = _popen(request, env, (slave, slave, slave), preexec_fn=functools.partial(_take_terminal, slave))
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return Spawned(process, [(master, False)], master, master)


async def _exited(process: subprocess.Popen[bytes]) -> int:
    """Its exit status once it ends, told by its pidfd (no thread, no SIGCHLD handler of ours); where
    the kernel has no pidfd (before Linux 5.3, some sandboxing kernels), by polling."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:
        # Nothing to wait on without a pidfd but a worker thread per program, which would hold the pool.
        while (returncode := process.poll()) is None:  # noqa: ASYNC110
            await asyncio.sleep(PID_POLL_INTERVAL)
        return returncode
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()
    loop.add_reader(pidfd, ended.set)
    try:
        while (returncode := process.poll()) is None:
            await ended.wait()
            ended.clear()
        return returncode
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _take_terminal(terminal: int) -> None:
    """``preexec_fn``: a new session whose controlling terminal is the PTY (by its descriptor, which
    stays right whatever order the child's stdio is set up in)."""
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
