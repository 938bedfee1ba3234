"""PTY sessions (``/v2/pty``, the dashboard's terminal): interactive terminals with a name that
outlive their sockets, beside the socket-bound :class:`~.terminal.Terminal` of ``/v1/shell/ws``.

A session reads its PTY all the time into an :class:`~.history.OutputHistory`, whether a socket is
attached or not, so the shell never blocks on a reader that went away; one socket at a time reads
it (a new one takes the terminal over). A durable attachment leaves its place behind when it goes,
and the next durable one resumes there: exactly the bytes it missed. A live reader that lags far
behind pauses the PTY instead of losing output.

The shell reads a small rc file after the usual ones: it marks in the output where a command line
starts running (``PS0``) and where the prompt comes back, with the exit status
(``PROMPT_COMMAND``), as OSC sequences terminals ignore. ``exec`` types a command and reads its
output and status between those marks, so it shares the terminal with the person at it."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyte

from .bash import resolve_dir
from .errors import InvalidRequest, SessionBusy, SessionExists, SessionLimit, SessionNotFound
from .history import OutputHistory, utf8_cut
from .terminal import Terminal, check_size, start_terminal

#: The marks the rc file prints: ``ESC ] 6973 ; C BEL`` (a line starts running) and
#: ``ESC ] 6973 ; D ; <status> BEL`` (the prompt is back).
MARK = b"\x1b]6973;"
_MARKS = re.compile(rb"\x1b\]6973;(C|D;(\d+))\x07")
RC_FILE = r"""# agentbox PTY session: the usual rc file, then the marks exec reads (OSC 6973, ignored by terminals).
[ -f ~/.bashrc ] && . ~/.bashrc
__agentbox_mark() { local s=$?; printf '\033]6973;D;%s\007' "$s"; return $s; }
PS0="${PS0-}"$'\e]6973;C\a'
PROMPT_COMMAND="__agentbox_mark${PROMPT_COMMAND:+;$PROMPT_COMMAND}"
"""
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ANSI = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")

MAX_SESSIONS = 20
IDLE_TIMEOUT = 3600.0
BUFFER_BYTES = 10 * 1024 * 1024
#: ``replay_bytes`` bounds and default for ``restore`` (AIO: 256 KiB to 10 MiB, 10 MiB by default).
REPLAY_MIN, REPLAY_MAX, REPLAY_DEFAULT = 256 * 1024, 10 * 1024 * 1024, 10 * 1024 * 1024
#: How far a live reader may lag before the PTY is paused for it.
LAG_WINDOW = 1024 * 1024
#: The most handed to a reader at a time.
CHUNK = 256 * 1024
#: The most output fed to the screen emulator to bring it up to date (older output is skipped).
SCREEN_CATCH_UP = 1024 * 1024
#: ``exec``: the longest wait for a command, and how long a new shell gets to show its prompt.
MAX_EXEC_TIMEOUT, PROMPT_WAIT = 600.0, 15.0
#: How long ``exec`` waits for the prompt of a line that has just ended (its output can arrive before
#: the prompt's mark) before it answers that the terminal is running a command.
PROMPT_BACK_GRACE = 1.0
#: How long an ended shell's exit status may take to arrive after its PTY closed.
EXIT_WAIT = 5.0
#: Why an attachment ended when the shell did: it still gets the output that was left.
EXITED = "the shell exited"
SIGNALS = {
    name: getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGQUIT", "SIGTSTP", "SIGCONT", "SIGUSR1", "SIGUSR2")
}


@dataclass(frozen=True)
class PtyLimits:
    max_sessions: int = MAX_SESSIONS
    #: Seconds a session may go unattached and unused before it is closed.
    idle_timeout: float = IDLE_TIMEOUT
    #: Output retained per session (for resume and restore).
    buffer_bytes: int = BUFFER_BYTES


@dataclass(frozen=True)
class ExecResult:
    command: str
    #: ``completed``; ``running`` when the timeout came first (it goes on in the terminal);
    #: ``terminated`` when the shell ended.
    status: str
    #: The command's output, terminal escapes removed, ``\r\n`` as ``\n``.
    output: str
    #: The whole exchange as the terminal showed it: the typed line, its output, the prompt.
    console: str
    exit_code: int | None


@dataclass(frozen=True)
class AttachStart:
    """What a new attachment gets before the live output."""

    resumed: bool
    #: ``restore``: the snapshot of the retained output.
    restored: bytes | None
    #: ``resumed``: bytes it missed that were already dropped from the history.
    dropped: int
    #: ``resumed``: the bytes it missed that follow (the first reads).
    missed: int


@dataclass(frozen=True)
class Screen:
    cols: int
    rows: int
    cursor_row: int
    cursor_col: int
    lines: list[str]


def check_replay(replay_bytes: int | None) -> int:
    if replay_bytes is None:
        return REPLAY_DEFAULT
    return min(max(replay_bytes, REPLAY_MIN), REPLAY_MAX)


class Attachment:
    """One socket's hold on a session: where it has read to, and whether it still holds it."""

    def __init__(self, session: PtySession, cursor: int, durable: bool) -> None:
        self.session = session
        self.cursor = cursor
        self.durable = durable
        #: Why the attachment ended (``taken over``, ``the shell exited``); None while it holds.
        self.ended: str | None = None
        self._end = asyncio.Event()

    def end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
            self._end.set()

    async def next_output(self, *, whole_characters: bool) -> bytes:
        """The output after the cursor (not consumed until :meth:`delivered`); ``b""`` once the
        attachment has ended. ``whole_characters``: never end inside a UTF-8 character."""
        history = self.session.history
        while self.ended in (None, EXITED):
            first, data = history.since(self.cursor, CHUNK)
            self.cursor = first
            if whole_characters and not history.closed:
                data = data[: utf8_cut(data)]
            if data:
                return data
            if history.closed:
                self.end(EXITED)
                break
            waiting = asyncio.ensure_future(history.wait_beyond(history.end))
            ending = asyncio.ensure_future(self._end.wait())
            try:
                await asyncio.wait({waiting, ending}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()
                ending.cancel()
        return b""

    def delivered(self, count: int) -> None:
        """``count`` bytes of the last :meth:`next_output` reached the socket."""
        self.cursor += count
        self.session.reader_moved()


class PtySession:
    """One named terminal: its shell, its retained output and screen, and at most one attachment."""

    def __init__(
        self,
        session_id: str,
        terminal: Terminal,
        size: tuple[int, int],
        limits: PtyLimits,
        *,
        anonymous: bool,
        on_end: Callable[[PtySession], None],
    ) -> None:
        self.session_id = session_id
        self.terminal = terminal
        self.limits = limits
        self.anonymous = anonymous
        self.cols, self.rows = size
        #: Called once the shell has exited or the session was idle too long: the registry closes it.
        self._on_end = on_end
        self.created_at = datetime.now(UTC)
        self.last_used = time.monotonic()
        self.history = OutputHistory(limits.buffer_bytes)
        self.attachment: Attachment | None = None
        self.attached_before = False
        #: Where the last durable attachment stopped reading (None: the last one was not durable).
        self.resume_at: int | None = None
        #: Prompt marks: whether the shell waits at its prompt, the last status, marks seen.
        self.at_prompt = False
        self.last_status: int | None = None
        #: Input arrived since the prompt was last shown: exec first clears the half-typed line.
        self._typed = False
        self._marks: list[tuple[str, int, int, int | None]] = []  # (kind, start, end, status)
        self._marked = asyncio.Event()
        self._scan = b""
        self._exec = asyncio.Lock()
        self._reader_moved = asyncio.Event()
        self._screen = pyte.Screen(self.cols, self.rows)
        self._stream = pyte.ByteStream(self._screen)
        self._screen_at = 0
        self._resizes: list[tuple[int, int, int]] = []  # (offset, cols, rows) not fed to the screen yet
        self._screen_lock = asyncio.Lock()
        self._idle: asyncio.TimerHandle | None = None
        self.closed = False
        #: The shell ended by itself (not closed by a call or the idle timeout).
        self.exited = False
        self._pump = asyncio.get_running_loop().create_task(self._read_terminal())

    # -- output ------------------------------------------------------------------------------

    async def _read_terminal(self) -> None:
        while data := await self.terminal.read():
            attachment = self.attachment
            while attachment is not None and attachment.ended is None and self._lag(attachment) > LAG_WINDOW:
                self._reader_moved.clear()
                await self._reader_moved.wait()
            self._note_marks(data)
            self.history.append(data)
        # The PTY closes as the shell ends: its status follows (a reader is told it with the end).
        with contextlib.suppress(TimeoutError, ProcessLookupError):
            await asyncio.wait_for(self.terminal.process.wait(), EXIT_WAIT)
        self.exited = True
        self.history.close()
        self._marked.set()
        if not self.closed:
            self._on_end(self)

    def _lag(self, attachment: Attachment) -> int:
        return self.history.end - attachment.cursor

    def reader_moved(self) -> None:
        self._reader_moved.set()

    def _note_marks(self, data: bytes) -> None:
        """Find the rc file's marks in the output (one may span two reads)."""
        base = self.history.end - len(self._scan)
        text = self._scan + data
        cut = 0
        for match in _MARKS.finditer(text):
            kind = match.group(1)[:1].decode()
            status = int(match.group(2)) if match.group(2) is not None else None
            self._marks.append((kind, base + match.start(), base + match.end(), status))
            self.at_prompt = kind == "D"
            self._typed = False
            if status is not None:
                self.last_status = status
            cut = match.end()
        del self._marks[:-64]
        pending = text.rfind(b"\x1b", cut)
        self._scan = text[pending:] if pending >= 0 and len(text) - pending < 32 else b""
        if cut:
            self._marked.set()
            self._marked = asyncio.Event()

    # -- attachments -------------------------------------------------------------------------

    def attach(self, *, durable: bool, restore: bool, replay_bytes: int | None) -> tuple[Attachment, AttachStart]:
        """Hold the terminal (taking it over from the socket that holds it, whose place a durable
        attachment inherits) and say what comes before the live output."""
        self._check_open()
        previous = self.attachment
        if previous is not None:
            self._release(previous, "another client attached to this terminal")
        history = self.history
        resumed, restored, dropped, cursor = False, None, 0, history.end
        if restore:
            restored = history.tail(check_replay(replay_bytes))
        elif durable and self.resume_at is not None:
            resumed = True
            dropped = max(history.start - self.resume_at, 0)
            cursor = max(self.resume_at, history.start)
        elif not self.attached_before:
            cursor = history.start  # the first socket sees the terminal from its first prompt
        attachment = Attachment(self, cursor, durable)
        self.attachment, self.attached_before = attachment, True
        self.touch()
        return attachment, AttachStart(resumed, restored, dropped, history.end - cursor if resumed else 0)

    def detach(self, attachment: Attachment) -> None:
        """The socket went away: a durable one leaves its place for the next to resume from."""
        if self.attachment is attachment:
            self._release(attachment, "detached")
            self.touch()

    def _release(self, attachment: Attachment, reason: str) -> None:
        self.resume_at = attachment.cursor if attachment.durable else None
        attachment.end(reason)
        self.attachment = None
        self._reader_moved.set()

    # -- typing ------------------------------------------------------------------------------

    async def write(self, data: bytes) -> int:
        self._check_open()
        self.touch()
        self._typed = True
        if b"\r" in data or b"\n" in data:
            self.at_prompt = False  # a line went in: the shell is not back at its prompt before its mark
        await self.terminal.write(data)
        return len(data)

    def resize(self, cols: object, rows: object) -> None:
        self._check_open()
        self.cols, self.rows = check_size(cols, rows)
        self._resizes.append((self.history.end, self.cols, self.rows))
        del self._resizes[:-256]
        self.terminal.resize(self.cols, self.rows)
        self.touch()

    def signal(self, name: str) -> int:
        """Send a signal to the foreground job (the shell itself at its prompt); its process group."""
        self._check_open()
        sig = SIGNALS.get(name if name.startswith("SIG") else f"SIG{name}")
        if sig is None:
            raise InvalidRequest(f"unknown signal {name!r}: use one of {', '.join(SIGNALS)}")
        self.touch()
        return self.terminal.signal_foreground(sig)

    async def exec(self, command: str, wait: float) -> ExecResult:
        """Type ``command`` at the prompt and wait up to ``wait`` s for the prompt to come back."""
        self._check_open()
        if not command.strip() or "\0" in command:
            raise InvalidRequest("the command is empty or contains a NUL character")
        if not 0 < wait <= MAX_EXEC_TIMEOUT:
            raise InvalidRequest(f"timeout must be more than 0 and at most {MAX_EXEC_TIMEOUT:g} seconds")
        if self._exec.locked():
            raise SessionBusy(f"terminal {self.session_id!r} is running another exec")
        async with self._exec:
            if not self._marks:  # a new shell: let it show its first prompt
                await self._wait_mark(lambda: bool(self._marks), PROMPT_WAIT)
            if not await self._wait_mark(lambda: self.at_prompt, PROMPT_BACK_GRACE):
                raise SessionBusy(
                    f"terminal {self.session_id!r} is running a command; wait for it, or signal it (SIGINT)"
                )
            start = self.history.end
            line = command.strip("\n")
            if "\n" in line:  # one compound command: one start mark, one prompt
                line = "{ " + line + "\n}"
            self.touch()
            # Ctrl-E Ctrl-U: drop a half-typed line first, so the command runs as given
            clear = b"\x05\x15" if self._typed else b""
            await self.terminal.write(clear + line.encode("utf-8", "surrogateescape") + b"\n")
            done = await self._wait_mark(lambda: self._prompt_since(start) is not None, wait)
            return self._exec_result(command, start, done)

    def _prompt_since(self, start: int) -> tuple[str, int, int, int | None] | None:
        return next((m for m in self._marks if m[0] == "D" and m[1] >= start), None)

    async def _wait_mark(self, ready: Callable[[], bool], within: float) -> bool:
        deadline = time.monotonic() + within
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0 or self.history.closed:
                return bool(ready())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._marked.wait(), left)
        return True

    def _exec_result(self, command: str, start: int, done: bool) -> ExecResult:
        prompt = self._prompt_since(start) if done else None
        began = next((m for m in self._marks if m[0] == "C" and m[1] >= start), None)
        end = prompt[1] if prompt is not None else self.history.end
        output = self.history.between(began[2], end) if began is not None else b""
        console = self.history.between(start, self.history.end)
        if prompt is not None:
            status, code = "completed", prompt[3]
        elif self.history.closed:
            status, code = "terminated", self.terminal.exit_code
        else:
            status, code = "running", None
        return ExecResult(command, status, _plain(output), _plain(console, keep_escapes=True), code)

    # -- the screen --------------------------------------------------------------------------

    async def screen(self) -> Screen:
        """The terminal's screen as a VT100 would show it now."""
        self._check_open()
        async with self._screen_lock:
            end = self.history.end
            resizes = [r for r in self._resizes if r[0] <= end]
            self._resizes = [r for r in self._resizes if r[0] > end]
            await asyncio.to_thread(self._catch_up, end, resizes)
            cursor = self._screen.cursor
            lines = [line.rstrip() for line in self._screen.display]
            return Screen(self._screen.columns, self._screen.lines, cursor.y, cursor.x, lines)

    def _catch_up(self, end: int, resizes: list[tuple[int, int, int]]) -> None:
        """Feed the screen the output it has not seen up to ``end``, applying ``resizes`` where
        they happened (in a worker thread: an emulator in Python takes its time)."""
        first = max(self._screen_at, self.history.start, end - SCREEN_CATCH_UP)
        if first > self._screen_at:  # too much to replay, or dropped: draw from a clean screen
            self._screen.reset()
            self._stream = pyte.ByteStream(self._screen)
        for offset, cols, rows in [*resizes, (end, 0, 0)]:
            if offset > first:
                self._stream.feed(self.history.between(first, offset))
                first = offset
            if cols:
                self._screen.resize(rows, cols)
        self._screen_at = end

    # -- life --------------------------------------------------------------------------------

    @property
    def cwd(self) -> str | None:
        with contextlib.suppress(OSError):
            return str(Path(f"/proc/{self.terminal.pid}/cwd").readlink())
        return None

    @property
    def busy(self) -> bool:
        """A command runs: no prompt since the last line went in, or a program holds the terminal.
        (The foreground group alone is not enough: between a loop's commands the shell holds it.)"""
        return not self.at_prompt or self.terminal.foreground_group() != self.terminal.pid

    @property
    def idle_seconds(self) -> float:
        return 0.0 if self.attachment is not None else time.monotonic() - self.last_used

    def touch(self) -> None:
        self.last_used = time.monotonic()
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self.attachment is None and not self.anonymous and not self.closed:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self.limits.idle_timeout, self._expire)

    def _expire(self) -> None:
        self._idle = None
        if self.attachment is None and not self.closed:
            self._on_end(self)

    def _check_open(self) -> None:
        if self.closed or self.history.closed:
            raise SessionNotFound(f"terminal {self.session_id!r} has ended")

    async def close(self) -> None:
        self.closed = True
        if self._idle is not None:
            self._idle.cancel()
        if self.attachment is not None:
            self._release(self.attachment, EXITED if self.exited else "the terminal was closed")
        await self.terminal.close()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump
        self.history.close()


def _plain(data: bytes, *, keep_escapes: bool = False) -> str:
    """Output as text: the marks (and, unless ``keep_escapes``, every escape) removed, ``\\r\\n`` as ``\\n``."""
    data = _MARKS.sub(b"", data)
    if not keep_escapes:
        data = _ANSI.sub(b"", data)
    return data.replace(b"\r\n", b"\n").decode("utf-8", "replace")


class PtySessions:
    """Every PTY session, named and anonymous, bounded by :attr:`PtyLimits.max_sessions`."""

    def __init__(self, limits: PtyLimits | None = None) -> None:
        self.limits = limits or PtyLimits()
        self._sessions: dict[str, PtySession] = {}
        self._starting = 0
        self._rc_dir: str | None = None
        self._closing: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._sessions)

    def _rcfile(self) -> str:
        if self._rc_dir is None:
            self._rc_dir = tempfile.mkdtemp(prefix="agentbox-pty-")
            (Path(self._rc_dir) / "rc.bash").write_text(RC_FILE)
        return str(Path(self._rc_dir) / "rc.bash")

    async def create(
        self,
        session_id: str | None = None,
        *,
        cols: int = 80,
        rows: int = 24,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        anonymous: bool = False,
    ) -> PtySession:
        """A new terminal; ``session_id`` is the caller's (a random one when not given)."""
        if session_id is not None and not _SESSION_ID.match(session_id):
            raise InvalidRequest("invalid session id: use 1-128 letters, digits, '.', '_' or '-'")
        cols, rows = check_size(cols, rows)
        for name in env or {}:
            if not _ENV_NAME.match(name):
                raise InvalidRequest(f"invalid environment variable name: {name!r}")
        start_dir = resolve_dir(str(Path.home()), cwd) if cwd else None
        # No await from the checks to the reservation: concurrent creations cannot exceed the limit.
        session_id = session_id or str(uuid.uuid4())
        if session_id in self._sessions:
            raise SessionExists(f"terminal {session_id!r} already exists")
        if len(self._sessions) + self._starting >= self.limits.max_sessions:
            raise SessionLimit(
                f"{self.limits.max_sessions} terminals are open already (AIO_PTY_MAX_SESSIONS); close one first"
            )
        self._starting += 1
        try:
            terminal = await start_terminal(cols, rows, start_dir, rcfile=self._rcfile(), env=env)
        finally:
            self._starting -= 1
        session = PtySession(session_id, terminal, (cols, rows), self.limits, anonymous=anonymous, on_end=self._ended)
        if session_id in self._sessions:  # made meanwhile under the same name
            await session.close()
            raise SessionExists(f"terminal {session_id!r} already exists")
        self._sessions[session_id] = session
        session.touch()
        return session

    def _ended(self, session: PtySession) -> None:
        """The shell exited or the session idled out: close it (in the background)."""
        task = asyncio.get_running_loop().create_task(self._drop(session))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _drop(self, session: PtySession) -> None:
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]
        await session.close()

    def get(self, session_id: str) -> PtySession:
        session = self._sessions.get(session_id)
        if session is None or session.anonymous:
            raise SessionNotFound(f"unknown terminal: {session_id}")
        return session

    def sessions(self) -> list[PtySession]:
        return [s for s in self._sessions.values() if not s.anonymous]

    async def close(self, session_id: str) -> None:
        await self._drop(self.get(session_id))

    async def close_anonymous(self, session: PtySession) -> None:
        await self._drop(session)

    async def aclose(self) -> None:
        for session in list(self._sessions.values()):
            await self._drop(session)
        for task in list(self._closing):
            await task
        if self._rc_dir is not None:
            shutil.rmtree(self._rc_dir, ignore_errors=True)
