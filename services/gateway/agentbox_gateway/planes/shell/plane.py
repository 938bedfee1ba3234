"""All shell sessions of the gateway behind one API: the shared default session, sessions made on
request, the session limit and idle eviction, and ``sandbox_execute_bash``'s run-to-the-end call."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import secrets
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ...settings import GatewaySettings
from ..streaming import OutputSink
from .bash import bash_quote, existing_dir, resolve_dir
from .commands import CommandLimits, Commands
from .detached import DetachedApp, start_detached
from .errors import InvalidRequest, SessionExists, SessionLimit, SessionNotFound
from .programs import Programs
from .prompts import PROMPT_CHARS, Ask, answer_prompts
from .pty import PtyLimits, PtySessions
from .record import CommandRecord
from .session import DEFAULT_NO_CHANGE_TIMEOUT, ShellSession
from .spawner import Spawner
from .terminal import Terminals

DEFAULT_SESSION_ID = "default"
#: The most sessions alive at once (aiod: 20 PTY sessions).
MAX_SESSIONS = 20
#: A session unused for this long may be reaped when a new one is needed (aiod: 3600 s).
SESSION_IDLE_TIMEOUT = 3600
#: ``sandbox_execute_bash`` kills a command after this many seconds unless told otherwise (1.x: 30).
DEFAULT_TOOL_TIMEOUT = 30
#: A session a REST call made without an id is closed this long after its command ended, unless its
#: id was used again meanwhile (the caller kept it): one-off calls leave no shells behind.
IMPLICIT_SESSION_GRACE = 30.0
#: The placeholder name of the warm spare shell until a new session takes it over.
_SPARE_ID = "spare"
#: A taken spare is replaced this long after, so that starting its successor does not compete for the
#: CPU with the command it was taken for; a new session arriving sooner starts it at once.
SPARE_REFILL_DELAY = 0.005

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def _prompt_prefix() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


@dataclass(frozen=True)
class SessionStats:
    total_sessions: int
    active_sessions: int
    idle_sessions: int
    max_sessions: int
    session_timeout: int
    usage_ratio: float


class ShellPlane:
    """All shell sessions of the gateway: the shared default one, and those made on request, and
    the commands started by id (:attr:`commands`).

    From ``settings`` only the commands' limits; shells get the gateway's environment minus secrets."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        max_sessions: int = MAX_SESSIONS,
        session_timeout: int = SESSION_IDLE_TIMEOUT,
        implicit_grace: float = IMPLICIT_SESSION_GRACE,
    ) -> None:
        self.max_sessions = max_sessions
        self.session_timeout = session_timeout
        self.implicit_grace = implicit_grace
        self._sessions: dict[str, ShellSession] = {}
        #: Starts the shells (a fork server: forking the gateway itself would stall its event loop).
        self._spawner = Spawner()
        #: A started bash not yet anybody's session, handed to the next new one in the home
        #: directory and replaced in the background (a new session that comes first waits for it).
        self._spare: ShellSession | None = None
        self._spare_timer: asyncio.TimerHandle | None = None
        self._spare_task: asyncio.Task[None] | None = None
        #: Timers closing one-off sessions (cancelled on close) and closings of evicted sessions (awaited).
        self._timers: set[asyncio.Task[None]] = set()
        self._closings: set[asyncio.Task[None]] = set()
        self._closed = False
        self._default_lock = asyncio.Lock()
        self.prompt_prefix = _prompt_prefix()
        #: Interactive PTY shells for people (``/v1/shell/ws``), apart from the command sessions.
        self.terminals = Terminals()
        #: Commands as resources (``/v2/commands``), in sessions of this plane or shells of their own.
        self.commands = Commands(
            self,
            CommandLimits(
                max_running=settings.command_max_running,
                retain_seconds=settings.command_retain_seconds,
                retain_chars=settings.command_retain_chars,
            ),
        )
        #: Programs run directly by argument vector (sandboxd's ProcessService), under the same limit.
        self.programs = Programs(settings.command_max_running, others_running=lambda: self.commands.running)
        #: Named terminals that outlive their sockets (``/v2/pty``, the dashboard's terminal).
        self.pty = PtySessions(
            PtyLimits(settings.pty_max_sessions, settings.pty_idle_timeout, settings.pty_buffer_bytes)
        )

    # -- sessions ----------------------------------------------------------------------------

    async def session(self, session_id: str) -> ShellSession:
        """An existing session (the shared default one is made on first use)."""
        if session_id == DEFAULT_SESSION_ID:
            return await self.default_session()
        session = self._sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"unknown shell session: {session_id}")
        session.kept = True
        return session

    async def session_or_create(self, session_id: str | None, *, preserve_symlinks: bool = False) -> ShellSession:
        """The session ``session_id``, made (auto: evictable) when there is none yet or no id is
        given, as AIO's ``/v1/shell/exec`` does."""
        if not session_id:
            return await self.create_session(auto=True, preserve_symlinks=preserve_symlinks)
        try:
            return await self.session(session_id)
        except SessionNotFound:
            pass
        try:
            return await self.create_session(session_id, auto=True, preserve_symlinks=preserve_symlinks)
        except SessionExists:  # made meanwhile by a concurrent call
            return await self.session(session_id)

    def sessions(self) -> list[ShellSession]:
        return list(self._sessions.values())

    @property
    def spare_ready(self) -> bool:
        """A warm bash waits for the next new session."""
        return self._spare is not None and self._spare.shell_ready

    def _make_room(self) -> list[ShellSession]:
        """Unregister long-idle sessions, then, when full, the least recently used idle implicit one;
        returns them for closing. Sessions that run a command or are starting are never taken."""
        now = time.monotonic()
        doomed = [
            s
            for s in self._sessions.values()
            if s.session_id != DEFAULT_SESSION_ID and not s.busy and now - s.last_used > self.session_timeout
        ]
        if len(self._sessions) - len(doomed) >= self.max_sessions:
            evictable = [
                s
                for s in self._sessions.values()
                if s not in doomed and s.auto and not s.busy and not s.starting and s.session_id != DEFAULT_SESSION_ID
            ]
            if not evictable:
                raise SessionLimit(
                    f"too many shell sessions (limit {self.max_sessions}), and none may be replaced (only "
                    "idle ones made without an id are): retry when a command has ended, or close a session"
                )
            doomed.append(min(evictable, key=lambda s: s.last_used))
        for session in doomed:
            del self._sessions[session.session_id]
        return doomed

    async def create_session(
        self,
        session_id: str | None = None,
        *,
        cwd: str | None = None,
        auto: bool = False,
        preserve_symlinks: bool = False,
        no_change_timeout: int | None = None,
        snapshot: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ShellSession:
        """A new session with its shell started. ``auto``: made implicitly, evictable when full.
        ``env``: variables every command of the session gets.
        ``snapshot``: a file of shell state (variables, functions, aliases) sourced first; a session
        whose snapshot fails to load is closed again (:class:`InvalidRequest`)."""
        if session_id is not None and not _SESSION_ID.match(session_id):
            raise InvalidRequest("invalid session id: use 1-128 letters, digits, '.', '_' or '-'")
        home = str(Path.home())
        start_dir = home
        if cwd:
            start_dir = resolve_dir(home, cwd)
        if not env and not preserve_symlinks and start_dir == home:
            await self._spare_arrived()
        # No await from here to the registration: concurrent creations cannot exceed the limit.
        if session_id is not None and session_id in self._sessions:
            raise SessionExists(f"shell session {session_id!r} already exists")
        doomed = self._make_room()
        kept = session_id is not None
        session_id = session_id or secrets.token_hex(8)
        no_change_timeout = no_change_timeout or DEFAULT_NO_CHANGE_TIMEOUT
        session = None if env else self._take_spare(start_dir, preserve_symlinks)
        if session is not None:
            session.adopt(session_id, auto=auto, no_change_timeout=no_change_timeout)
        else:
            session = ShellSession(
                session_id,
                start_dir,
                spawner=self._spawner,
                auto=auto,
                preserve_symlinks=preserve_symlinks,
                no_change_timeout=no_change_timeout,
                env=env,
            )
        session.kept = kept
        self._sessions[session_id] = session
        self._warm_spare()
        for old in doomed:  # already unregistered: their shells end in the background
            self._spawn(self._closings, old.close(kill_jobs=False))
        try:
            await session.ensure_shell()
        except BaseException:
            if self._sessions.get(session_id) is session:
                del self._sessions[session_id]
            await session.close(kill_jobs=True)
            raise
        if snapshot:
            await self._source(session, snapshot)
        return session

    async def own_shell(self, name: str) -> ShellSession:
        """A shell for one command (``/v2/commands`` without a session), registered nowhere: the
        warm spare when one is ready or on its way, else a new bash in the home directory. Its user
        closes it."""
        await self._spare_arrived()
        session = self._take_spare(str(Path.home()), False)
        if session is not None:
            session.adopt(name, auto=True, no_change_timeout=DEFAULT_NO_CHANGE_TIMEOUT)
        else:
            session = ShellSession(name, str(Path.home()), spawner=self._spawner, auto=True)
        self._warm_spare()
        return session

    async def _spare_arrived(self) -> None:
        """Let a spare on its way arrive: the fork server was asked for it before any bash this
        caller could ask for, so taking it is never slower than starting one."""
        if self._spare is None and self._spare_timer is not None:
            self._refill_now()
        if self._spare is None and self._spare_task is not None:
            await asyncio.wait([self._spare_task])

    def _take_spare(self, start_dir: str, preserve_symlinks: bool) -> ShellSession | None:
        """The warm spare, when it suits a new session: a live bash in ``start_dir`` with the
        default path semantics."""
        spare = self._spare
        if spare is None or not spare.shell_ready or preserve_symlinks or spare.cwd != start_dir:
            return None
        self._spare = None
        return spare

    def _warm_spare(self) -> None:
        """Start a spare bash in the background unless one is ready or on its way."""
        if self._closed or self._spare is not None or self._spare_task or self._spare_timer:
            return
        self._spare_timer = asyncio.get_running_loop().call_later(SPARE_REFILL_DELAY, self._refill_now)

    def _refill_now(self) -> None:
        if self._spare_timer is not None:
            self._spare_timer.cancel()
            self._spare_timer = None
        if not self._closed and self._spare is None and self._spare_task is None:
            self._spare_task = asyncio.get_running_loop().create_task(self._start_spare())

    def _spawn(self, tasks: set[asyncio.Task[None]], coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _discard_spare(self) -> None:
        if self._spare_timer is not None:
            self._spare_timer.cancel()
            self._spare_timer = None
        if self._spare_task is not None:  # awaited, not cancelled: a bash half started is not left behind
            await self._spare_task
        spare, self._spare = self._spare, None
        if spare is not None:
            await spare.close(kill_jobs=True)

    async def _start_spare(self) -> None:
        spare = ShellSession(_SPARE_ID, str(Path.home()), spawner=self._spawner, auto=True)
        try:
            await spare.ensure_shell()
        except Exception:  # no bash, no room for a process: new sessions start cold and say why
            await spare.close(kill_jobs=True)
            return
        finally:
            self._spare_task = None
        if self._closed:
            await spare.close(kill_jobs=True)
        else:
            self._spare = spare

    def release_when_done(self, session: ShellSession, record: CommandRecord) -> None:
        """``session`` was made for a call that named none: close it :attr:`implicit_grace` seconds
        after ``record`` ends, unless its id is used again meanwhile (then the caller kept it)."""
        if session.kept:
            return

        async def close_unless_kept() -> None:
            await record.finished.wait()
            await asyncio.sleep(self.implicit_grace)
            if not session.kept and not session.busy and self._sessions.get(session.session_id) is session:
                del self._sessions[session.session_id]
                self._spawn(self._closings, session.close(kill_jobs=False))

        self._spawn(self._timers, close_unless_kept())

    async def _source(self, session: ShellSession, snapshot: str) -> None:
        record = await session.start(f". {bash_quote(snapshot)}", merged=False)
        await record.wait()
        if record.exit_code:
            await self._drop(session, kill_jobs=True)
            raise InvalidRequest(
                f"sourcing {snapshot} failed (exit {record.exit_code}): {record.stderr.text(2000).strip()}"
            )

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
        """Close every session, and the warm spare too: afterwards no shell of this plane runs
        (the next new session starts a spare again)."""
        await self._discard_spare()
        sessions = list(self._sessions.values())
        for session in sessions:
            await self._drop(session, kill_jobs=True)
        return len(sessions)

    def stats(self) -> SessionStats:
        now = time.monotonic()
        total = len(self._sessions)
        active = sum(1 for s in self._sessions.values() if s.busy or now - s.last_used < 300)
        return SessionStats(
            total_sessions=total,
            active_sessions=active,
            idle_sessions=total - active,
            max_sessions=self.max_sessions,
            session_timeout=self.session_timeout,
            usage_ratio=round(total / self.max_sessions, 4) if self.max_sessions else 1.0,
        )

    # -- the MCP tool ------------------------------------------------------------------------

    async def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        new_session: bool = False,
        time_limit: float | None = None,
        session_id: str | None = None,
        on_output: OutputSink | None = None,
        ask: Ask | None = None,
    ) -> CommandRecord:
        """``sandbox_execute_bash``: run to the end (killed after ``time_limit`` s) in the shared
        session, a new one, or ``session_id``; stderr interleaved with stdout. stdin is closed, or,
        with ``ask``, a pipe: a prompt the command waits on is handed to ``ask`` and its answer typed
        (:mod:`.prompts`). ``on_output`` gets the output as it is printed. Cancelling the call kills
        the command (the session stays usable)."""
        time_limit = DEFAULT_TOOL_TIMEOUT if time_limit is None else time_limit
        if time_limit <= 0:
            raise InvalidRequest("timeout must be a positive number of seconds")
        if new_session:
            session = await self.create_session(session_id, auto=True)
        else:
            session = await self.session(session_id or DEFAULT_SESSION_ID)
        record = await session.start(
            command, cwd=cwd, hard_timeout=time_limit, busy_wait=time_limit, interactive=ask is not None
        )
        tail = ""
        try:
            async with anyio.create_task_group() as group:
                if ask is not None:
                    group.start_soon(answer_prompts, session, record, ask, lambda: tail)
                if on_output is not None or ask is not None:
                    async for chunk in record.follow():
                        tail = (tail + chunk)[-PROMPT_CHARS:]
                        if on_output is not None:
                            await on_output(chunk)
                await record.finished.wait()
                group.cancel_scope.cancel()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await session.stop(record, "cancelled")
            raise
        return record

    # -- detached apps -----------------------------------------------------------------------

    async def detach(self, command: str, *, cwd: str | None = None, session_id: str | None = None) -> DetachedApp:
        """Start ``command`` as a detached app (:mod:`.detached`): it outlives every session. It runs
        in ``cwd``, taken from the directory of the session ``session_id`` (the shared one when
        none is given) when relative or missing, or from the home directory without such a session."""
        known = self._sessions.get(session_id or DEFAULT_SESSION_ID)
        base = existing_dir(known.cwd) if known is not None else str(Path.home())
        start_dir = resolve_dir(base, cwd) if cwd else base
        return await anyio.to_thread.run_sync(start_detached, command, start_dir)

    async def aclose(self) -> None:
        self._closed = True
        for task in self._timers:
            task.cancel()
        await asyncio.gather(*self._timers, *self._closings, return_exceptions=True)
        await self.pty.aclose()
        await self.terminals.aclose()
        await self.commands.aclose()
        await self.programs.aclose()
        await self.close_all()
        await self._spawner.aclose()
