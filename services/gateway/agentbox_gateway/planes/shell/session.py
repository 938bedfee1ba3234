"""One named shell session: a long-lived bash fed one wrapped command line at a time, so ``cd``,
exported variables, aliases and shell functions persist between commands.

The shell runs in its own kernel session (``setsid``) with job control on (``set -m``): every pipeline
gets its own process group. It is a child subreaper, so whatever it started stays below it in the
process tree, even after ``setsid`` or a double fork. A timeout or kill SIGKILLs what the command
started (found in ``/proc`` by ancestry and start time; earlier background jobs are spared) and sends
the shell a signal whose trap abandons the rest of the command line, so the session keeps its state.
Where that cannot work (the trap fires inside a shell function, or a builtin blocks), the shell is
killed and the session transparently restarts in the same directory on its next command, with a note
in the output. Closing a session kills everything it started, then its shell."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import time
from collections import deque
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

from agentbox_common.processes import kill_process_group, sandbox_environment

from .bash import (
    ABORT_SIGNAL,
    INIT,
    MARK_END,
    BashProtocol,
    BashShell,
    command_line,
    end_prefix,
    existing_dir,
    parse_end,
    partial_marker,
    resolve_dir,
)
from .errors import CommandNotFound, InvalidRequest, SessionBusy, SessionNotFound, ShellUnavailable
from .processes import boot_ticks, command_targets, kill_everything, signal_all
from .record import CommandRecord
from .spawner import Spawner
from .stdin import CommandInput

#: ``/v1/shell``: a command with no new output for this long returns ``no_change_timeout`` (still running).
DEFAULT_NO_CHANGE_TIMEOUT = 120
#: Finished commands remembered per session for ``view`` / ``output``.
HISTORY = 10
#: Output printed between commands (background jobs) that is carried into the next command.
PENDING_KEEP = 64_000
#: After a kill, how long the shell gets to report the command's end before it is itself killed.
STOP_GRACE = 2.0
#: A new session is not evicted before its first command for this long (its creator is about to
#: run one); one whose creator never does becomes evictable after it.
STARTING_GRACE = 30.0

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ShellSession:
    """A named bash session: one command at a time, its history, and a shell restarted on demand."""

    def __init__(
        self,
        session_id: str,
        cwd: str,
        *,
        spawner: Spawner,
        auto: bool,
        preserve_symlinks: bool = False,
        no_change_timeout: int = DEFAULT_NO_CHANGE_TIMEOUT,
        env: dict[str, str] | None = None,
    ) -> None:
        for name in env or {}:
            if not _ENV_NAME.match(name):
                raise InvalidRequest(f"invalid environment variable name: {name!r}")
        self.session_id = session_id
        self.cwd = cwd
        self._spawner = spawner
        #: Created implicitly (exec without a session, ``new_session``): may be evicted when full.
        self.auto = auto
        #: Named by its caller or looked up by id since: not closed when its command ends.
        self.kept = False
        self.preserve_symlinks = preserve_symlinks
        self.no_change_timeout = no_change_timeout
        #: Variables every command of the session gets (a command's own ``env`` wins).
        self.env = dict(env or {})
        self.created_at = datetime.now(UTC)
        self._created = time.monotonic()
        self.last_used = self._created
        self.last_used_at = self.created_at
        self.history: deque[CommandRecord] = deque(maxlen=HISTORY)
        self.command_count = 0
        self._shell: BashShell | None = None
        #: Kernel session ids of this session's shells (replaced ones too): their jobs die with it.
        self._sids: set[int] = set()
        #: Process groups of the background jobs the shell reported after its last command.
        self.jobs: set[int] = set()
        #: Held by the running command; waiters take it first come first served, one woken per release.
        self._turn = asyncio.Lock()
        self._waiting = 0
        self._pending: deque[tuple[int, str]] = deque()
        self._pending_len = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()
        self.closed = False

    # -- state -------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A command runs or is waiting for its turn."""
        return self._turn.locked() or self._waiting > 0

    @property
    def starting(self) -> bool:
        """Made but its first command not started yet (and not long ago): never evicted meanwhile."""
        return not self.command_count and not self.closed and time.monotonic() - self._created < STARTING_GRACE

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

    @property
    def shell_ready(self) -> bool:
        """Its bash is running (a warm spare can be handed out without waiting)."""
        return self._shell is not None and not self._shell.exited

    def adopt(self, session_id: str, *, auto: bool, no_change_timeout: int) -> None:
        """Become the session ``session_id``: a warm spare taken by :class:`ShellPlane`, its clocks
        restarted so it counts as new (its bash was started in the home directory, as a new one is)."""
        self.session_id = session_id
        self.auto = auto
        self.no_change_timeout = no_change_timeout
        self.created_at = self.last_used_at = datetime.now(UTC)
        self._created = self.last_used = time.monotonic()

    def _touch(self) -> None:
        self.last_used = time.monotonic()
        self.last_used_at = datetime.now(UTC)

    # -- the bash process --------------------------------------------------------------------

    async def ensure_shell(self) -> BashShell:
        async with self._starting:
            if self._shell is not None and not self._shell.exited:
                return self._shell
            return await self._start_shell()

    async def _start_shell(self) -> BashShell:
        if self.closed:
            raise SessionNotFound(f"session {self.session_id!r} was closed")
        bash = shutil.which("bash")
        if bash is None:
            raise ShellUnavailable("bash is not installed in this sandbox")
        cwd = existing_dir(self.cwd)
        env = sandbox_environment()
        for name in ("PWD", "OLDPWD"):
            env.pop(name, None)
        # Pipes, not a terminal: let Python programs' progress reach the session as it is printed.
        env.setdefault("PYTHONUNBUFFERED", "1")
        shell = self._shell = BashShell()
        try:
            transport = await self._spawner.spawn(
                BashProtocol(shell, self._on_data, self._on_exit),
                [bash, "--noprofile", "--norc"],
                cwd=cwd,
                env=env,
            )
        except BaseException:
            if self._shell is shell:
                self._shell = None
            raise
        shell.transport = transport
        shell.pid = transport.get_pid()
        self._sids.add(shell.pid)
        if self.closed or self._shell is not shell:  # closed while bash was starting: leave nothing
            kill_process_group(shell.pid, signal.SIGKILL)
            transport.close()
            raise SessionNotFound(f"session {self.session_id!r} was closed")
        self.jobs = set()
        self.cwd = cwd
        shell.write(INIT + ("set +P\n" if self.preserve_symlinks else "set -P\n"))
        return shell

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background, keeping a reference so it is not garbage-collected."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_exit(self, shell: BashShell) -> None:
        shell.exited = True
        shell.gone.set()
        if shell is self._shell:
            self._spawn(self._after_exit(shell))

    async def _after_exit(self, shell: BashShell) -> None:
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
            record.note(f"the shell exited (code {exit_code}); a fresh one starts in {self.cwd} on the next command")
        else:
            record.note(
                f"the command did not stop, so its shell was killed; a fresh one starts in "
                f"{self.cwd} on the next command (shell variables and functions are reset)"
            )
        self._finish(record, exit_code, None)

    def _on_data(self, shell: BashShell, fd: int, data: bytes) -> None:
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
            cut = len(buffer) - partial_marker(buffer, shell.prefix)
            record.emit(fd, shell.decode(fd, bytes(buffer[:cut])))
            del buffer[:cut]
            return
        end = buffer.find(MARK_END, index + len(shell.prefix))
        record.emit(fd, shell.decode(fd, bytes(buffer[:index]), final=end >= 0))
        if end < 0:
            del buffer[:index]
            return
        shell.markers[fd] = bytes(buffer[index + len(shell.prefix) : end])
        rest = bytes(buffer[end + len(MARK_END) :])
        buffer.clear()
        if rest:
            self._park(fd, shell.decode(fd, rest))
        if shell.markers[1] is not None and shell.markers[2] is not None:
            exit_code, cwd, self.jobs = parse_end(shell.markers[1])
            self._finish(record, exit_code, cwd)

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
        record.finished_at = datetime.now(UTC)
        if record.deadline is not None:
            record.deadline.cancel()
        if record.stdin is not None:
            record.stdin.close()
        record.finished.set()
        record.notify()
        self._touch()
        self._turn.release()

    # -- commands ----------------------------------------------------------------------------

    async def _claim(self, wait: float) -> None:
        """Take the session's turn within ``wait`` seconds (0: only if nobody holds or awaits it).
        ``asyncio.Lock`` wakes one waiter per release, in arrival order, so waiters are served first
        come first served and a release costs the same however many wait."""
        self._waiting += 1
        try:
            async with asyncio.timeout(max(wait, 0)):
                await self._turn.acquire()
        except TimeoutError:
            running = self.current
            what = f" running {running.command!r}" if running else ""
            raise SessionBusy(
                f"session {self.session_id!r} is busy{what}; wait for it, kill it, or use another session"
            ) from None
        finally:
            self._waiting -= 1
        if self.closed:
            self._turn.release()  # the next waiter learns it too
            raise SessionNotFound(f"session {self.session_id!r} was closed")

    async def start(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        merged: bool = True,
        interactive: bool = False,
        hard_timeout: float | None = None,
        busy_wait: float = 0.0,
        preserve_symlinks: bool | None = None,
        strict_cwd: bool = True,
        run: str | None = None,
    ) -> CommandRecord:
        """Start ``command`` and return its record at once; ``record.wait()`` for the end.

        ``cwd``: where it runs (relative: from the session's directory); one that is not an
        enterable directory is :class:`InvalidRequest`, or, not ``strict_cwd``, the session's own
        directory (AIO's ``/v1/shell/exec`` without ``strict``).
        ``merged``: stderr goes into stdout (exact interleaving) instead of its own stream.
        ``interactive``: stdin is a pipe that :meth:`write` feeds, instead of ``/dev/null``.
        ``hard_timeout``: seconds after which the command's processes are killed.
        ``run``: the shell text to run when it is not ``command`` itself (``command`` run by ``sh``,
        or as a program with arguments); the record names ``command``."""
        text = command if run is None else run
        if "\0" in text:
            raise InvalidRequest("the command contains a NUL character")
        env = {**self.env, **(env or {})}
        for name, value in env.items():
            if not _ENV_NAME.match(name):
                raise InvalidRequest(f"invalid environment variable name: {name!r}")
            if "\0" in value:
                raise InvalidRequest(f"environment variable {name} contains a NUL character")
        await self._claim(busy_wait)
        try:
            shell = await self.ensure_shell()
            target = self._target_dir(cwd, strict=strict_cwd)
            record = self._prepare(command, merged=merged, interactive=interactive)
            record.pause_output = shell.pause_output
            self.history.append(record)
            self.command_count += 1
            if preserve_symlinks is not None:
                self.preserve_symlinks = preserve_symlinks
            nonce = secrets.token_hex(8)
            line = command_line(
                text,
                nonce,
                cwd=target,
                env=env,
                stdin_path=record.stdin.path if record.stdin else None,
                merged=merged,
                preserve_symlinks=preserve_symlinks,
            )
            shell.prefix = end_prefix(nonce)
            shell.markers = {1: None, 2: None}
            while self._pending:
                record.emit(*self._pending.popleft())
            self._pending_len = 0
            shell.write(line)
        except BaseException:
            if self.current is not None:
                self._finish(self.current, None, None)
            else:
                self._turn.release()
            raise
        self._touch()
        if hard_timeout is not None:
            record.deadline = asyncio.get_running_loop().call_later(hard_timeout, self._expire, record)
        return record

    def _target_dir(self, cwd: str | None, *, strict: bool) -> str | None:
        if not cwd:
            return None
        try:
            return resolve_dir(self.cwd, cwd)
        except InvalidRequest:
            if strict:
                raise
            return None

    def _prepare(self, command: str, *, merged: bool, interactive: bool) -> CommandRecord:
        record = CommandRecord(
            command_id=secrets.token_hex(6),
            command=command,
            session_id=self.session_id,
            cwd_before=self.cwd,
            merged=merged,
            start_tick=boot_ticks(),
            earlier_jobs=frozenset(self.jobs),
        )
        if interactive:
            try:
                record.stdin = CommandInput()
            except OSError as exc:
                raise ShellUnavailable(f"cannot make the command's stdin: {exc}") from exc
        return record

    def _expire(self, record: CommandRecord) -> None:
        if not record.done:
            self._spawn(self.stop(record, "hard_timeout"))

    def _abort_line(self, shell: BashShell, record: CommandRecord) -> None:
        """Ask the shell to drop the rest of the command line once the current job has ended (not
        before its trap is set: the command has not started then, and the signal would end bash)."""
        if not record.done and shell.trapping:
            with contextlib.suppress(ProcessLookupError):
                os.kill(shell.pid, ABORT_SIGNAL)

    async def _until_trapping(self, shell: BashShell) -> None:
        """Wait (at most :data:`STOP_GRACE`) for a just-started shell to have run its init script: it
        says so only in ``/proc``, so it is looked at every 10 ms."""
        for _ in range(int(STOP_GRACE / 0.01)):
            if shell.trapping or shell.exited:
                return
            await asyncio.sleep(0.01)

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
            groups, pids = await asyncio.to_thread(command_targets, shell.pid, record)
            signal_all(groups, pids, signal.SIGKILL)
            idle_rounds = 0 if groups or pids else idle_rounds + 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(record.finished.wait(), 0.05 if idle_rounds else 0.1)
        if not record.done and shell is self._shell:
            groups, pids = await asyncio.to_thread(command_targets, shell.pid, record)
            signal_all(groups, pids | {shell.pid}, signal.SIGKILL)
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
        await self._until_trapping(shell)
        self._abort_line(shell, record)
        groups, pids = await asyncio.to_thread(command_targets, shell.pid, record)
        signal_all(groups, pids, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(record.finished.wait(), 1.0)
        return record

    async def write(self, text: str, command_id: str | None = None) -> CommandRecord:
        """Feed the running command's stdin; a trailing Ctrl-D (``\\x04``) then closes it (EOF)."""
        record = self.current
        if record is None:
            raise InvalidRequest(f"no command is running in session {self.session_id!r}")
        if command_id is not None and command_id != record.command_id:
            raise InvalidRequest(f"command {command_id!r} is not the one running in session {self.session_id!r}")
        stdin = record.stdin
        if stdin is None or not stdin.open:
            raise InvalidRequest("the running command's stdin is closed (it was started without input)")
        eof = text.endswith("\x04")
        data = (text[:-1] if eof else text).encode("utf-8", "surrogateescape")
        deadline = time.monotonic() + 10
        while data:
            if record.done or not stdin.open:
                raise InvalidRequest("the command ended before reading all of its input")
            try:
                written = stdin.write(data)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InvalidRequest("the command is not reading its input (stdin is full)") from None
                await asyncio.sleep(0.02)
                continue
            except OSError as exc:
                raise InvalidRequest(f"cannot write to the command's stdin: {exc}") from exc
            data = data[written:]
        if eof and stdin.open:
            self._spawn(stdin.end(record.finished))
        self._touch()
        return record

    async def close(self, *, kill_jobs: bool) -> None:
        """End the session. ``kill_jobs``: also kill its background jobs (else they are left to run)."""
        self.closed = True
        record = self.current
        if record is not None:
            await self.stop(record, "terminated")
        if kill_jobs:  # while the shell lives, it adopts the orphans of what is killed
            await asyncio.to_thread(kill_everything, frozenset(self._sids))
        shell, self._shell = self._shell, None
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
