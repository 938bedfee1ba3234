"""The shell plane: persistent bash sessions shared by ``sandbox_execute_bash`` and ``/v1/shell``,
``/v1/bash``.

Each session is one long-lived, non-interactive ``bash`` in its own session (``setsid``), fed one
wrapped command line at a time on its stdin, so ``cd``, exported variables, aliases and shell
functions persist between commands. A command is evaluated in the shell itself, inside a ``{ ...; }``
group that gives it its own stdin (``/dev/null``, or a pipe the caller may write to) and, for the
MCP tool and ``/v1/shell``, ``2>&1`` so output is exactly interleaved. After it, the shell prints an
end marker carrying a per-command nonce, the exit status, ``$PWD`` and its background jobs on stdout
(and a second marker on stderr); output is everything before the markers, so output without a
trailing newline and background children that keep the pipes open never confuse or block a result.

The shell runs with job control on (``set -m``): every pipeline gets its own process group. A
timeout or kill SIGKILLs the groups the command started (found in ``/proc`` by kernel session and
start time; earlier background jobs are spared) and sends the shell a signal whose trap abandons the
rest of the command line, so the session keeps its state. Where that cannot work (the trap fires
inside a shell function, or a builtin blocks), the shell is killed and the session transparently
restarts in the same directory on its next command, with a note in the output.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import getpass
import os
import re
import secrets
import shutil
import signal
import socket
import time
from collections import deque
from collections.abc import Collection, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentbox_common.processes import kill_process_group, sandbox_environment

from ..settings import GatewaySettings

DEFAULT_SESSION_ID = "default"
#: The most sessions alive at once (aiod: 20 PTY sessions).
MAX_SESSIONS = 20
#: A session unused for this long may be reaped when a new one is needed (aiod: 3600 s).
SESSION_IDLE_TIMEOUT = 3600
#: ``sandbox_execute_bash`` kills a command after this many seconds unless told otherwise (1.x: 30).
DEFAULT_TOOL_TIMEOUT = 30
#: ``/v1/shell``: a command with no new output for this long returns ``no_change_timeout`` (and keeps running).
DEFAULT_NO_CHANGE_TIMEOUT = 120
#: Results are cut to this many characters, keeping the head and the tail (AIO: 30,000).
OUTPUT_LIMIT = 30_000
#: Characters kept of each stream of each command, at the start and at the end (the middle is dropped).
STREAM_KEEP = 256_000
#: Finished commands remembered per session for ``view`` / ``output``.
HISTORY = 10
#: Output printed between commands (background jobs) that is carried into the next command.
PENDING_KEEP = 64_000
#: After a kill, how long the shell gets to report the command's end before it is itself killed.
STOP_GRACE = 2.0

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_MARK = b"\0\x1fAB"
_MARK_END = b"\x1f\0"

#: The signal that tells a shell to abandon the rest of the running command line.
_ABORT_SIGNAL = signal.SIGUSR2

#: Run once in each new shell: job control (own process group per pipeline), aliases as in an
#: interactive shell, the end-of-command reporter, and the abort trap. Every command runs inside a
#: one-pass ``for`` loop, so ``break 1000`` from the trap skips the rest of its line; a trap that fires
#: inside a shell function (which ``break`` cannot leave) kills the shell instead (it is restarted).
_INIT = (
    "set -m\n"
    "shopt -s expand_aliases\n"
    "__agentbox_done() { builtin printf '\\0\\37AB%s\\37%d\\37%s\\37' \"$1\" \"$2\" \"$PWD\"; "
    "builtin jobs -p; builtin printf '\\37\\0'; builtin printf '\\0\\37AB%s\\37E\\37\\0' \"$1\" >&2; }\n"
    "__agentbox_abort() { [[ -n ${__agentbox_running-} ]] || return 0; "
    "(( ${#FUNCNAME[@]} < 2 )) || builtin kill -9 $$; }\n"
    f"trap '__agentbox_abort; break 1000 2>/dev/null' {_ABORT_SIGNAL.name.removeprefix('SIG')}\n"
)


class ShellError(Exception):
    """A shell request that cannot be served; each door maps the subclass to its own error shape."""


class SessionNotFound(ShellError):
    pass


class CommandNotFound(ShellError):
    pass


class SessionExists(ShellError):
    pass


class SessionBusy(ShellError):
    pass


class SessionLimit(ShellError):
    pass


class InvalidRequest(ShellError):
    pass


class ShellUnavailable(ShellError):
    pass


def truncation_marker(omitted: int) -> str:
    return f"\n\n[... {omitted} characters truncated ...]\n\n"


def truncate_middle(text: str, limit: int | None) -> str:
    """Keep the first and last ``limit / 2`` characters of ``text`` (``None`` or 0: no limit)."""
    if not limit or len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return text[:head] + truncation_marker(len(text) - limit) + text[len(text) - tail :]


class OutputBuffer:
    """One output stream of one command, addressable by absolute character offsets.

    Only the first ``keep`` characters and the last ``keep`` to ``2 * keep`` are retained, so a
    command printing gigabytes cannot exhaust the gateway's memory; reads across the dropped middle
    show a marker."""

    def __init__(self, keep: int = STREAM_KEEP) -> None:
        self._keep = keep
        self._head: list[str] = []
        self._head_len = 0
        self._tail: list[str] = []
        self._tail_len = 0
        self.total = 0

    def append(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        room = self._keep - self._head_len
        if room > 0:
            part = text[:room]
            self._head.append(part)
            self._head_len += len(part)
            text = text[room:]
        if text:
            self._tail.append(text)
            self._tail_len += len(text)
            if self._tail_len > 2 * self._keep:
                kept = "".join(self._tail)[-self._keep :]
                self._tail = [kept]
                self._tail_len = len(kept)

    @property
    def dropped(self) -> int:
        return self.total - self._head_len - self._tail_len

    def _parts(self) -> tuple[str, str]:
        head = "".join(self._head)
        tail = "".join(self._tail)
        self._head, self._tail = [head], [tail]
        return head, tail

    def read(self, offset: int = 0) -> str:
        """Everything from ``offset`` (as returned in an earlier ``total``) to the end."""
        head, tail = self._parts()
        offset = max(0, offset)
        tail_start = self.total - self._tail_len
        if offset >= tail_start:
            return tail[offset - tail_start :]
        gap = truncation_marker(self.dropped) if self.dropped else ""
        return (head[offset:] if offset < self._head_len else "") + gap + tail

    def text(self, limit: int | None = None) -> str:
        """The whole stream, cut to ``limit`` characters (head and tail kept) when given."""
        head, tail = self._parts()
        if not self.dropped:
            return truncate_middle(head + tail, limit)
        if not limit or limit >= len(head) + len(tail):
            return head + truncation_marker(self.dropped) + tail
        first = head[: limit // 2]
        last = tail[max(0, len(tail) - (limit - len(first))) :]
        return first + truncation_marker(self.total - len(first) - len(last)) + last


@dataclass
class CommandRecord:
    """One command run in a session: its output so far, and how it ended."""

    command_id: str
    command: str
    session_id: str
    cwd_before: str
    merged: bool
    start_tick: int
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    status: str = "running"
    exit_code: int | None = None
    cwd: str | None = None
    #: Why the gateway stopped it (``hard_timeout``, ``terminated``); ``None`` while it runs on its own.
    stop_reason: str | None = None
    stop_signal: int = 0
    #: Background jobs of earlier commands (process groups): never this command's to kill.
    earlier_jobs: frozenset[int] = frozenset()
    last_activity: float = field(default_factory=time.monotonic)
    #: ``interactive`` commands read a pipe: we write ``stdin_fd``; ``stdin_keep`` (its read end)
    #: keeps written data alive until bash opens ``stdin_path`` (/proc/<gateway>/fd/<read end>).
    stdin_fd: int | None = None
    stdin_keep: int | None = None
    stdin_path: str | None = None

    def __post_init__(self) -> None:
        self.output = OutputBuffer()
        # Merged commands have one stream: stdout *is* the interleaved output.
        self.stdout = self.output if self.merged else OutputBuffer()
        self.stderr = OutputBuffer()
        self.finished = asyncio.Event()
        self._activity = asyncio.Event()
        self.deadline: asyncio.TimerHandle | None = None

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def emit(self, fd: int, text: str) -> None:
        if not text:
            return
        if fd == 1:
            self.stdout.append(text)
            if self.stdout is not self.output:
                self.output.append(text)
        else:
            self.stderr.append(text)
            self.output.append(text)
        self.last_activity = time.monotonic()
        self.notify()

    def note(self, text: str) -> None:
        """A line from agentbox itself (the shell was restarted, ...) after the interleaved output;
        the separate stdout/stderr streams stay exactly what the command printed."""
        sep = "" if not self.output.total or self.output.read(self.output.total - 1) == "\n" else "\n"
        self.output.append(f"{sep}[agentbox] {text}\n")
        self.notify()

    def notify(self) -> None:
        previous, self._activity = self._activity, asyncio.Event()
        previous.set()

    async def wait(self, seconds: float | None = None, no_change_seconds: float | None = None) -> str:
        """Wait for the end: ``"done"``, or ``"timeout"`` / ``"no_change"`` while it keeps running."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while not self.done:
            now = time.monotonic()
            waits = []
            if deadline is not None:
                if now >= deadline:
                    return "timeout"
                waits.append(deadline - now)
            if no_change_seconds:
                quiet_until = self.last_activity + no_change_seconds
                if now >= quiet_until:
                    return "no_change"
                waits.append(quiet_until - now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.finished.wait(), min(waits) if waits else None)
        return "done"

    async def wait_for_output(self, offset: int, stderr_offset: int, seconds: float) -> None:
        """Long poll: return once there is output past the offsets, the command ended, or ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.done and self.stdout.total <= offset and self.stderr.total <= stderr_offset:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._activity.wait(), remaining)


@dataclass(frozen=True)
class _Proc:
    pid: int
    pgid: int
    start: int


def _boot_ticks() -> int:
    """Now, in the clock of ``/proc/<pid>/stat``'s start time (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLOCK_TICKS)


def _session_processes(sids: Collection[int]) -> list[_Proc]:
    """Live processes of the kernel sessions ``sids`` (everything a shell started, orphans included)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                data = stat.read()
            fields = data[data.rindex(b")") + 2 :].split()
            if fields[0] == b"Z" or int(fields[3]) not in sids:
                continue
            found.append(_Proc(int(name), int(fields[2]), int(fields[19])))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _command_targets(shell_pid: int, record: CommandRecord) -> tuple[set[int], set[int]]:
    """Process groups and lone processes started by the running command.

    Spared: processes started before it (``/proc`` start ticks), background jobs the shell
    reported before it, and groups whose leader predates it (an earlier job that forked meanwhile).
    Processes in the shell's own group (command substitutions) are signalled one by one."""
    since = record.start_tick
    procs = _session_processes({shell_pid})
    leader_start = {proc.pid: proc.start for proc in procs}
    groups: set[int] = set()
    pids: set[int] = set()
    for proc in procs:
        if proc.pid == shell_pid or proc.start < since or proc.pgid in record.earlier_jobs:
            continue
        if proc.pgid == shell_pid:
            pids.add(proc.pid)
        elif leader_start.get(proc.pgid, since) >= since:
            groups.add(proc.pgid)
    return groups, pids


def _signal_all(groups: set[int], pids: set[int], sig: int) -> None:
    for group in groups:
        kill_process_group(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def resolve_dir(base: str, path: str) -> str:
    """An absolute, existing, enterable directory for ``cd`` (a relative ``path`` is taken from ``base``)."""
    full = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.isdir(full):
        raise InvalidRequest(f"directory does not exist: {path}")
    if not os.access(full, os.X_OK):
        raise InvalidRequest(f"permission denied: cannot enter {path}")
    return full


def _existing_dir(path: str) -> str:
    """``path`` if it is still a directory, else the home directory (a restarted shell's start)."""
    return path if os.path.isdir(path) else str(Path.home())


def _prompt_prefix() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def bash_quote(text: str) -> str:
    """``$'...'`` quoting that survives any text on one line (bash decodes the escapes)."""
    out = ["$'"]
    for char in text:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(char)
    out.append("'")
    return "".join(out)


def _partial_marker(buffer: bytearray, prefix: bytes) -> int:
    """Length of the longest end of ``buffer`` that could be the start of ``prefix``."""
    index = buffer.find(b"\0", max(0, len(buffer) - len(prefix) + 1))
    while index != -1:
        if prefix.startswith(bytes(buffer[index:])):
            return len(buffer) - index
        index = buffer.find(b"\0", index + 1)
    return 0


class _BashProtocol(asyncio.SubprocessProtocol):
    def __init__(self, session: ShellSession, shell: _Shell) -> None:
        self._session = session
        self._shell = shell

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._session._on_data(self._shell, fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._shell.pipe_closed(fd)

    def process_exited(self) -> None:
        self._session._on_exit(self._shell)


class _Shell:
    """One bash process of a session (a session outlives its shells when one has to be replaced)."""

    def __init__(self) -> None:
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self.exited = False
        self.scan = {1: bytearray(), 2: bytearray()}
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in (1, 2)}
        self.prefix = b""
        self.markers: dict[int, bytes | None] = {1: None, 2: None}
        self._open_pipes = {1, 2}
        self.pipes_closed = asyncio.Event()
        self.gone = asyncio.Event()

    def pipe_closed(self, fd: int) -> None:
        self._open_pipes.discard(fd)
        if not self._open_pipes:
            self.pipes_closed.set()

    def decode(self, fd: int, data: bytes, final: bool = False) -> str:
        return self.decoders[fd].decode(data, final)

    def write(self, text: str) -> None:
        assert self.transport is not None
        pipe = self.transport.get_pipe_transport(0)
        if pipe is None or pipe.is_closing():
            raise ShellUnavailable("the shell's input is closed")
        pipe.write(text.encode("utf-8", "surrogateescape"))


class ShellSession:
    """A named bash session: one command at a time, its history, and a shell restarted on demand."""

    def __init__(self, session_id: str, cwd: str, *, auto: bool,
                 preserve_symlinks: bool = False, no_change_timeout: int = DEFAULT_NO_CHANGE_TIMEOUT) -> None:
        self.session_id = session_id
        self.cwd = cwd
        #: Created implicitly (exec without a session, ``new_session``): may be evicted when full.
        self.auto = auto
        self.preserve_symlinks = preserve_symlinks
        self.no_change_timeout = no_change_timeout
        self.created_at = datetime.now(UTC)
        self.last_used = time.monotonic()
        self.last_used_at = self.created_at
        self.history: deque[CommandRecord] = deque(maxlen=HISTORY)
        self.command_count = 0
        self._shell: _Shell | None = None
        #: Kernel session ids of this session's shells (replaced ones too): their jobs die with it.
        self._sids: set[int] = set()
        #: Process groups of the background jobs the shell reported after its last command.
        self.jobs: set[int] = set()
        self._claimed = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._pending: deque[tuple[int, str]] = deque()
        self._pending_len = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    # -- state -------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._claimed

    @property
    def current(self) -> CommandRecord | None:
        """The running command, if any."""
        if self.history and not self.history[-1].done:
            return self.history[-1]
        return None

    @property
    def last(self) -> CommandRecord | None:
        return self.history[-1] if self.history else None

    def record(self, command_id: str | None) -> CommandRecord | None:
        """A remembered command by id, or the latest one."""
        if command_id is None:
            return self.last
        for record in self.history:
            if record.command_id == command_id:
                return record
        raise CommandNotFound(f"unknown command {command_id!r} in session {self.session_id!r}")

    def _touch(self) -> None:
        self.last_used = time.monotonic()
        self.last_used_at = datetime.now(UTC)

    # -- the bash process --------------------------------------------------------------------

    async def ensure_shell(self) -> _Shell:
        if self._shell is not None and not self._shell.exited:
            return self._shell
        bash = shutil.which("bash")
        if bash is None:
            raise ShellUnavailable("bash is not installed in this sandbox")
        cwd = _existing_dir(self.cwd)
        env = sandbox_environment()
        for name in ("PWD", "OLDPWD"):
            env.pop(name, None)
        # Pipes, not a terminal: let Python programs' progress reach the session as it is printed.
        env.setdefault("PYTHONUNBUFFERED", "1")
        shell = self._shell = _Shell()
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _BashProtocol(self, shell), bash, "--noprofile", "--norc",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env, start_new_session=True,
            )
        except BaseException as exc:
            self._shell = None
            if isinstance(exc, OSError):
                raise ShellUnavailable(f"cannot start bash: {exc}") from exc
            raise
        shell.transport = transport
        shell.pid = transport.get_pid()
        self._sids.add(shell.pid)
        self.jobs = set()
        self.cwd = cwd
        shell.write(_INIT + ("set +P\n" if self.preserve_symlinks else "set -P\n"))
        return shell

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background, keeping a reference so it is not garbage-collected."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_exit(self, shell: _Shell) -> None:
        shell.exited = True
        shell.gone.set()
        if shell is self._shell:
            self._spawn(self._after_exit(shell))

    async def _after_exit(self, shell: _Shell) -> None:
        """The shell died (``exit``, killed): finish the running command with what it printed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(shell.pipes_closed.wait(), 0.25)
        assert shell.transport is not None
        code = shell.transport.get_returncode()
        shell.transport.close()
        if shell is not self._shell:  # already replaced (it died while idle)
            return
        self._shell = None
        record = self.current
        if record is None:
            return
        for fd in (1, 2):
            record.emit(fd, shell.decode(fd, bytes(shell.scan[fd]), final=True))
            shell.scan[fd].clear()
        exit_code = 128 - code if code is not None and code < 0 else code
        if record.stop_reason is None:
            record.note(f"the shell exited (code {exit_code}); a fresh one starts in {self.cwd} "
                        "on the next command")
        else:
            record.note(f"the command did not stop, so its shell was killed; a fresh one starts in "
                        f"{self.cwd} on the next command (shell variables and functions are reset)")
        self._finish(record, exit_code, None)

    def _on_data(self, shell: _Shell, fd: int, data: bytes) -> None:
        if shell is not self._shell:
            return
        buffer = shell.scan[fd]
        buffer += data
        record = self.current
        if record is None or shell.markers[fd] is not None:
            self._park(fd, shell.decode(fd, bytes(buffer)))
            buffer.clear()
            return
        index = buffer.find(shell.prefix)
        if index < 0:
            cut = len(buffer) - _partial_marker(buffer, shell.prefix)
            record.emit(fd, shell.decode(fd, bytes(buffer[:cut])))
            del buffer[:cut]
            return
        end = buffer.find(_MARK_END, index + len(shell.prefix))
        record.emit(fd, shell.decode(fd, bytes(buffer[:index]), final=end >= 0))
        if end < 0:
            del buffer[:index]
            return
        shell.markers[fd] = bytes(buffer[index + len(shell.prefix) : end])
        rest = bytes(buffer[end + len(_MARK_END) :])
        buffer.clear()
        if rest:
            self._park(fd, shell.decode(fd, rest))
        if shell.markers[1] is not None and shell.markers[2] is not None:
            status, _, rest = shell.markers[1].partition(b"\x1f")
            cwd, _, jobs = rest.rpartition(b"\x1f")
            self.jobs = {int(pid) for pid in jobs.split() if pid.isdigit()}
            try:
                exit_code: int | None = int(status)
            except ValueError:
                exit_code = None
            self._finish(record, exit_code, cwd.decode("utf-8", "surrogateescape") or None)

    def _park(self, fd: int, text: str) -> None:
        """Output printed while no command runs (background jobs): handed to the next command."""
        if not text:
            return
        self._pending.append((fd, text))
        self._pending_len += len(text)
        while self._pending_len > PENDING_KEEP and len(self._pending) > 1:
            self._pending_len -= len(self._pending.popleft()[1])

    def _finish(self, record: CommandRecord, exit_code: int | None, cwd: str | None) -> None:
        if record.done:
            return
        if cwd:
            self.cwd = cwd
        record.cwd = self.cwd
        if record.stop_signal and (exit_code is None or exit_code < 128):
            exit_code = 128 + record.stop_signal  # stopped by us: say so even if the shell saw success
        record.exit_code = exit_code
        record.status = record.stop_reason or "completed"
        if record.deadline is not None:
            record.deadline.cancel()
        for fd in (record.stdin_fd, record.stdin_keep):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        record.stdin_fd = record.stdin_keep = None
        record.finished.set()
        record.notify()
        self._touch()
        self._claimed = False
        self._idle.set()

    # -- commands ----------------------------------------------------------------------------

    async def _claim(self, wait: float) -> None:
        deadline = time.monotonic() + wait
        while self._claimed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                running = self.current
                what = f" running {running.command!r}" if running else ""
                raise SessionBusy(f"session {self.session_id!r} is busy{what}; wait for it, kill it, "
                                  "or use another session")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
        if self.closed:
            raise SessionNotFound(f"session {self.session_id!r} was closed")
        self._claimed = True
        self._idle.clear()

    async def start(self, command: str, *, cwd: str | None = None, env: dict[str, str] | None = None,
                    merged: bool = True, interactive: bool = False, hard_timeout: float | None = None,
                    busy_wait: float = 0.0, preserve_symlinks: bool | None = None) -> CommandRecord:
        """Start ``command`` and return its record at once; ``record.wait()`` for the end.

        ``merged``: stderr goes into stdout (exact interleaving) instead of its own stream.
        ``interactive``: stdin is a pipe that :meth:`write` feeds, instead of ``/dev/null``.
        ``hard_timeout``: seconds after which the command's processes are killed."""
        if "\0" in command:
            raise InvalidRequest("the command contains a NUL character")
        for name in env or {}:
            if not _ENV_NAME.match(name):
                raise InvalidRequest(f"invalid environment variable name: {name!r}")
        await self._claim(busy_wait)
        try:
            shell = await self.ensure_shell()
            target = resolve_dir(self.cwd, cwd) if cwd else None
            record = self._prepare(command, merged=merged, interactive=interactive)
            self.history.append(record)
            self.command_count += 1
            parts = []
            if preserve_symlinks is not None:
                self.preserve_symlinks = preserve_symlinks
                parts.append("set +P; " if preserve_symlinks else "set -P; ")
            parts.append(f"__agentbox_cmd={bash_quote(command)} __agentbox_running=1; ")
            parts.append("for __agentbox_once in 1; do { ")
            if target:
                parts.append(f"builtin cd -- {bash_quote(target)} >/dev/null && ")
            parts.extend(f"{name}={bash_quote(value)} " for name, value in (env or {}).items())
            # Plain ``eval``: ``NAME=value builtin eval`` would not pass NAME on to the command.
            parts.append('eval "$__agentbox_cmd"; } ')
            parts.append(f"<{bash_quote(record.stdin_path or '/dev/null')}{' 2>&1' if merged else ''}; done; ")
            nonce = secrets.token_hex(8)
            parts.append(f"__agentbox_rc=$? __agentbox_running=; __agentbox_done {nonce} $__agentbox_rc\n")
            shell.prefix = _MARK + nonce.encode() + b"\x1f"
            shell.markers = {1: None, 2: None}
            while self._pending:
                record.emit(*self._pending.popleft())
            self._pending_len = 0
            shell.write("".join(parts))
        except BaseException:
            if self.current is not None:
                self._finish(self.current, None, None)
            else:
                self._claimed = False
                self._idle.set()
            raise
        self._touch()
        if hard_timeout is not None:
            record.deadline = asyncio.get_running_loop().call_later(hard_timeout, self._expire, record)
        return record

    def _prepare(self, command: str, *, merged: bool, interactive: bool) -> CommandRecord:
        record = CommandRecord(command_id=secrets.token_hex(6), command=command, session_id=self.session_id,
                               cwd_before=self.cwd, merged=merged, start_tick=_boot_ticks(),
                               earlier_jobs=frozenset(self.jobs))
        if interactive:
            record.stdin_keep, record.stdin_fd = os.pipe()
            os.set_blocking(record.stdin_fd, False)
            record.stdin_path = f"/proc/{os.getpid()}/fd/{record.stdin_keep}"
        return record

    def _expire(self, record: CommandRecord) -> None:
        if not record.done:
            self._spawn(self.stop(record, "hard_timeout"))

    def _abort_line(self, shell: _Shell, record: CommandRecord) -> None:
        """Ask the shell to drop the rest of the command line once the current job has ended."""
        if not record.done:
            with contextlib.suppress(ProcessLookupError):
                os.kill(shell.pid, _ABORT_SIGNAL)

    async def stop(self, record: CommandRecord, reason: str) -> None:
        """SIGKILL the command's process groups and abort its line until the shell reports the end;
        kill the shell if it does not (e.g. a ``read`` builtin blocked on its input)."""
        shell = self._shell
        if record.done or shell is None:
            return
        record.stop_reason = record.stop_reason or reason
        record.stop_signal = record.stop_signal or signal.SIGKILL
        deadline = time.monotonic() + STOP_GRACE
        idle_rounds = 0
        while not record.done and time.monotonic() < deadline and idle_rounds < 3:
            self._abort_line(shell, record)
            groups, pids = await asyncio.to_thread(_command_targets, shell.pid, record)
            _signal_all(groups, pids, signal.SIGKILL)
            idle_rounds = 0 if groups or pids else idle_rounds + 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(record.finished.wait(), 0.05 if idle_rounds else 0.1)
        if not record.done and shell is self._shell:
            groups, pids = await asyncio.to_thread(_command_targets, shell.pid, record)
            _signal_all(groups, pids | {shell.pid}, signal.SIGKILL)
            kill_process_group(shell.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(record.finished.wait(), STOP_GRACE)

    async def send_signal(self, sig: int) -> CommandRecord | None:
        """Send ``sig`` to the running command's processes and drop the rest of its line; waits a
        moment for the end, so the answer usually shows it."""
        record = self.current
        shell = self._shell
        if record is None or shell is None:
            return self.last
        if sig == signal.SIGKILL:
            await self.stop(record, "terminated")
            return record
        record.stop_reason = "terminated"
        record.stop_signal = sig
        self._abort_line(shell, record)
        groups, pids = await asyncio.to_thread(_command_targets, shell.pid, record)
        _signal_all(groups, pids, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(record.finished.wait(), 1.0)
        return record

    async def write(self, text: str, command_id: str | None = None) -> CommandRecord:
        """Feed the running command's stdin; a trailing Ctrl-D (``\\x04``) then closes it (EOF)."""
        record = self.current
        if record is None:
            raise InvalidRequest(f"no command is running in session {self.session_id!r}")
        if command_id is not None and command_id != record.command_id:
            raise InvalidRequest(f"command {command_id!r} is not the one running in session "
                                 f"{self.session_id!r}")
        if record.stdin_fd is None:
            raise InvalidRequest("the running command's stdin is closed (it was started without input)")
        eof = text.endswith("\x04")
        data = (text[:-1] if eof else text).encode("utf-8", "surrogateescape")
        deadline = time.monotonic() + 10
        while data:
            if record.stdin_fd is None:
                raise InvalidRequest("the command ended before reading all of its input")
            try:
                written = os.write(record.stdin_fd, data)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InvalidRequest("the command is not reading its input (stdin is full)") from None
                await asyncio.sleep(0.02)
                continue
            except OSError as exc:
                raise InvalidRequest(f"cannot write to the command's stdin: {exc}") from exc
            data = data[written:]
        if eof and record.stdin_fd is not None:
            os.close(record.stdin_fd)
            record.stdin_fd = None
        self._touch()
        return record

    async def close(self, *, kill_jobs: bool) -> None:
        """End the session. ``kill_jobs``: also kill its background jobs (else they are left to run)."""
        self.closed = True
        record = self.current
        if record is not None:
            await self.stop(record, "terminated")
        shell, self._shell = self._shell, None
        if kill_jobs:
            procs = await asyncio.to_thread(_session_processes, self._sids)
            _signal_all({p.pgid for p in procs}, {p.pid for p in procs}, signal.SIGKILL)
        if shell is not None and shell.transport is not None:
            kill_process_group(shell.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(shell.gone.wait(), STOP_GRACE)
            shell.transport.close()
        for task in list(self._tasks):
            task.cancel()
        if record is not None and not record.done:  # never leave a waiter hanging
            record.stop_reason = record.stop_reason or "terminated"
            self._finish(record, None, None)
        self._claimed = False
        self._idle.set()


@dataclass(frozen=True)
class SessionStats:
    total_sessions: int
    active_sessions: int
    idle_sessions: int
    max_sessions: int
    session_timeout: int
    usage_ratio: float


class ShellPlane:
    """All shell sessions of the gateway: the shared default one, and those made on request.

    ``settings`` holds nothing shell-specific; shells get the gateway's environment minus secrets."""

    def __init__(self, settings: GatewaySettings, *, max_sessions: int = MAX_SESSIONS,
                 session_timeout: int = SESSION_IDLE_TIMEOUT) -> None:
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self._sessions: dict[str, ShellSession] = {}
        self._default_lock = asyncio.Lock()
        self.prompt_prefix = _prompt_prefix()

    # -- sessions ----------------------------------------------------------------------------

    async def session(self, session_id: str) -> ShellSession:
        """An existing session (the shared default one is made on first use)."""
        if session_id == DEFAULT_SESSION_ID:
            return await self.default_session()
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"unknown shell session: {session_id}")
        return session

    def sessions(self) -> list[ShellSession]:
        return list(self._sessions.values())

    async def _make_room(self) -> None:
        """Reap long-idle sessions, then evict the least recently used idle implicit one."""
        now = time.monotonic()
        for session in list(self._sessions.values()):
            if (session.session_id != DEFAULT_SESSION_ID and not session.busy
                    and now - session.last_used > self.session_timeout):
                await self._drop(session, kill_jobs=False)
        if len(self._sessions) < self.max_sessions:
            return
        evictable = [s for s in self._sessions.values()
                     if s.auto and not s.busy and s.session_id != DEFAULT_SESSION_ID]
        if not evictable:
            raise SessionLimit(f"too many shell sessions (limit {self.max_sessions}); close one first")
        await self._drop(min(evictable, key=lambda s: s.last_used), kill_jobs=False)

    async def create_session(self, session_id: str | None = None, *, cwd: str | None = None,
                             auto: bool = False, preserve_symlinks: bool = False,
                             no_change_timeout: int | None = None) -> ShellSession:
        """A new session with its shell started. ``auto``: made implicitly, evictable when full."""
        if session_id is not None and not _SESSION_ID.match(session_id):
            raise InvalidRequest("invalid session id: use 1-128 letters, digits, '.', '_' or '-'")
        if session_id is not None and session_id in self._sessions:
            raise SessionExists(f"shell session {session_id!r} already exists")
        home = str(Path.home())
        start_dir = home
        if cwd:
            start_dir = resolve_dir(home, cwd)
        await self._make_room()
        session_id = session_id or secrets.token_hex(8)
        if session_id in self._sessions:  # taken while making room
            raise SessionExists(f"shell session {session_id!r} already exists")
        session = ShellSession(session_id, start_dir, auto=auto, preserve_symlinks=preserve_symlinks,
                               no_change_timeout=no_change_timeout or DEFAULT_NO_CHANGE_TIMEOUT)
        self._sessions[session_id] = session
        try:
            await session.ensure_shell()
        except BaseException:
            self._sessions.pop(session_id, None)
            raise
        return session

    async def default_session(self) -> ShellSession:
        async with self._default_lock:
            session = self._sessions.get(DEFAULT_SESSION_ID)
            if session is None:
                session = await self.create_session(DEFAULT_SESSION_ID)
            return session

    async def _drop(self, session: ShellSession, *, kill_jobs: bool) -> None:
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]
        await session.close(kill_jobs=kill_jobs)

    async def close_session(self, session_id: str) -> None:
        """Close one session, killing what it still runs (background jobs included)."""
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"unknown shell session: {session_id}")
        await self._drop(session, kill_jobs=True)

    async def close_all(self) -> int:
        sessions = list(self._sessions.values())
        for session in sessions:
            await self._drop(session, kill_jobs=True)
        return len(sessions)

    def stats(self) -> SessionStats:
        now = time.monotonic()
        total = len(self._sessions)
        active = sum(1 for s in self._sessions.values() if s.busy or now - s.last_used < 300)
        return SessionStats(total_sessions=total, active_sessions=active, idle_sessions=total - active,
                            max_sessions=self.max_sessions, session_timeout=self.session_timeout,
                            usage_ratio=round(total / self.max_sessions, 4) if self.max_sessions else 1.0)

    # -- the MCP tool ------------------------------------------------------------------------

    async def run(self, command: str, *, cwd: str | None = None, new_session: bool = False,
                  time_limit: float | None = None, session_id: str | None = None) -> CommandRecord:
        """``sandbox_execute_bash``: run to the end (killed after ``time_limit`` s) in the shared
        session, a new one, or ``session_id``; stdin is closed, stderr interleaved with stdout."""
        time_limit = DEFAULT_TOOL_TIMEOUT if time_limit is None else time_limit
        if time_limit <= 0:
            raise InvalidRequest("timeout must be a positive number of seconds")
        if new_session:
            session = await self.create_session(session_id, auto=True)
        else:
            session = await self.session(session_id or DEFAULT_SESSION_ID)
        record = await session.start(command, cwd=cwd, hard_timeout=time_limit, busy_wait=time_limit)
        await record.finished.wait()
        return record

    async def aclose(self) -> None:
        await self.close_all()
