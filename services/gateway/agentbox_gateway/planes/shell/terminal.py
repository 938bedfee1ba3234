"""Interactive terminals: a bash on a pseudo-terminal of its own, for a person typing (the
dashboard's xterm.js over ``/v1/shell/ws``), beside the command sessions agents drive.

The shell runs with the same key-free environment as every sandbox command, in a new kernel
session whose controlling terminal is the PTY (``setsid --ctty``), so job control, ``vim`` and
Ctrl-C work. Closing the terminal kills everything in that session, background jobs and orphans
included."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import struct
import termios
from pathlib import Path

from agentbox_common.processes import kill_process_group, sandbox_environment

from .errors import InvalidRequest, SessionLimit, ShellUnavailable
from .processes import session_processes

#: Terminals open at once; one more is refused rather than letting tabs pile up shells.
MAX_TERMINALS = 16
#: A terminal's size bounds (columns, rows): a resize outside them is refused.
MAX_SIZE = 1000
#: How much is read from the PTY at a time.
_READ_CHUNK = 64 * 1024
#: Output waiting for the reader before the PTY is no longer read (the shell then blocks).
_BACKLOG = 64


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def check_size(cols: object, rows: object) -> tuple[int, int]:
    """``(cols, rows)`` when both are whole numbers from 1 to :data:`MAX_SIZE`, else InvalidRequest."""
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_SIZE for v in (cols, rows)):
        raise InvalidRequest(f"cols and rows must be whole numbers from 1 to {MAX_SIZE}")
    return int(cols), int(rows)  # type: ignore[call-overload]


class Terminal:
    """One bash on one PTY. :meth:`read` yields its output, :meth:`write` types into it."""

    def __init__(self, process: asyncio.subprocess.Process, master: int) -> None:
        self.process = process
        self._master = master
        self._output: asyncio.Queue[bytes] = asyncio.Queue(_BACKLOG)
        self._loop = asyncio.get_running_loop()
        self._reading = False
        self._closed = False
        self._resume_reading()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def exit_code(self) -> int | None:
        """The shell's exit status once it has ended (a signal ``N`` as ``128 + N``)."""
        code = self.process.returncode
        return 128 - code if code is not None and code < 0 else code

    def foreground_group(self) -> int:
        """The process group the terminal's keyboard signals go to: the running job's, or the shell's
        at its prompt."""
        try:
            return os.tcgetpgrp(self._master)
        except OSError:
            return self.pid

    def signal_foreground(self, sig: int) -> int:
        """Send ``sig`` to the foreground process group (as a key like Ctrl-C would); returns it."""
        group = self.foreground_group()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, sig)
        return group

    def _resume_reading(self) -> None:
        if not self._reading and not self._closed:
            self._loop.add_reader(self._master, self._on_readable)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._master)
            self._reading = False

    def _on_readable(self) -> None:
        try:
            data = os.read(self._master, _READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the PTY's other side is gone
            data = b""
        if not data:
            self._pause_reading()
        self._output.put_nowait(data)
        if self._output.full():
            self._pause_reading()

    async def read(self) -> bytes:
        """The next output bytes; ``b""`` once the shell and everything it started are gone."""
        data = await self._output.get()
        if data:
            self._resume_reading()
        else:
            self._output.put_nowait(b"")  # every later read sees the end too
        return data

    async def write(self, data: bytes) -> None:
        """Type ``data`` (waiting while the PTY's input buffer is full)."""
        view = memoryview(data)
        while view and not self._closed:
            try:
                written = os.write(self._master, view)
            except BlockingIOError:
                await asyncio.sleep(0.01)
                continue
            except OSError:
                return
            view = view[written:]

    def resize(self, cols: object, rows: object) -> None:
        """Set the terminal's size; the shell gets SIGWINCH. Bad sizes raise InvalidRequest."""
        size = check_size(cols, rows)
        if not self._closed:
            _set_size(self._master, *size)

    async def close(self) -> None:
        """Kill the shell's whole kernel session and release the PTY."""
        if self._closed:
            return
        self._closed = True
        self._pause_reading()
        kill_process_group(self.pid, signal.SIGHUP)
        for proc in session_processes({self.pid}):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGKILL)
        kill_process_group(self.pid)
        os.close(self._master)
        with contextlib.suppress(ProcessLookupError):
            await asyncio.wait_for(self.process.wait(), 5)


async def start_terminal(
    cols: int, rows: int, cwd: str | None, *, rcfile: str | None = None, env: dict[str, str] | None = None
) -> Terminal:
    """An interactive bash on a new PTY of ``cols`` x ``rows`` in ``cwd`` (the home directory by
    default). ``rcfile``: read instead of ``~/.bashrc``; ``env``: variables added to the sandbox's."""
    environment = sandbox_environment(extra={**(env or {}), "TERM": "xterm-256color", "COLORTERM": "truecolor"})
    bash, setsid = shutil.which("bash", path=environment.get("PATH")), shutil.which("setsid")
    if bash is None or setsid is None:
        raise ShellUnavailable("bash and setsid (util-linux) are needed for a terminal")
    master, slave = os.openpty()
    try:
        os.set_blocking(master, False)
        _set_size(master, cols, rows)
        process = await asyncio.create_subprocess_exec(
            setsid,
            "--ctty",
            bash,
            *(("--rcfile", rcfile) if rcfile else ()),
            "-i",
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment,
            cwd=cwd or str(Path.home()),
        )
    except OSError as exc:
        os.close(master)
        raise ShellUnavailable(f"cannot start a terminal: {exc}") from exc
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return Terminal(process, master)


class Terminals:
    """The open terminals, bounded by :data:`MAX_TERMINALS`."""

    def __init__(self, limit: int = MAX_TERMINALS) -> None:
        self.limit = limit
        self._open: set[Terminal] = set()
        #: Terminals whose bash is being started: they count against the limit from the first await on.
        self._starting = 0

    def __len__(self) -> int:
        return len(self._open)

    async def open(self, cols: int = 80, rows: int = 24, cwd: str | None = None) -> Terminal:
        """A new interactive bash in ``cwd`` (the home directory by default)."""
        cols, rows = check_size(cols, rows)
        # No await from the check to the reservation: concurrent opens cannot exceed the limit.
        if len(self._open) + self._starting >= self.limit:
            raise SessionLimit(f"{self.limit} terminals are open already; close one first")
        self._starting += 1
        try:
            terminal = await self._start(cols, rows, cwd)
        finally:
            self._starting -= 1
        self._open.add(terminal)
        return terminal

    async def _start(self, cols: int, rows: int, cwd: str | None) -> Terminal:
        return await start_terminal(cols, rows, cwd)

    async def close(self, terminal: Terminal) -> None:
        self._open.discard(terminal)
        await terminal.close()

    async def aclose(self) -> None:
        for terminal in list(self._open):
            await self.close(terminal)
