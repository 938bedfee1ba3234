"""One command run in a session: its output streams, its end, and waits on either."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .output import OutputBuffer
from .stdin import CommandInput

#: The most characters :meth:`CommandRecord.follow` yields at once (one progress message, one SSE event).
FOLLOW_CHUNK = 64_000
#: A follower this many characters behind pauses the command's output (well under what the
#: buffer keeps, so a follower never misses any).
FOLLOW_LAG = 128_000


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
    #: ``interactive`` commands read a FIFO the session writes; the others read ``/dev/null``.
    stdin: CommandInput | None = None

    def __post_init__(self) -> None:
        self.output = OutputBuffer()
        # Merged commands have one stream: stdout *is* the interleaved output.
        self.stdout = self.output if self.merged else OutputBuffer()
        self.stderr = OutputBuffer()
        self.finished = asyncio.Event()
        self._activity = asyncio.Event()
        self.deadline: asyncio.TimerHandle | None = None
        #: Where each running :meth:`follow` has read to.
        self._followers: dict[object, int] = {}
        #: Set by the session: pause (``True``) or resume the command's output.
        self.pause_output: Callable[[bool], None] | None = None
        self._paused = False

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
        if self._followers and not self._paused and self.output.total - min(self._followers.values()) > FOLLOW_LAG:
            self._pause(True)
        self.notify()

    def _pause(self, paused: bool) -> None:
        if self.pause_output is not None and paused != self._paused:
            self._paused = paused
            self.pause_output(paused)

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

    async def follow(self, offset: int = 0) -> AsyncIterator[str]:
        """The interleaved output from ``offset`` on, in chunks as it is printed, until the end.

        Reads the bounded buffer, never a copy of its own; a reader more than ``FOLLOW_LAG``
        characters behind pauses the command's output until it catches up (as a pipe would), so
        it misses nothing and memory stays bounded."""
        key = object()
        self._followers[key] = offset
        try:
            while True:
                activity = self._activity
                total = self.output.total
                if total > offset:
                    text = self.output.read(offset)
                    offset = self._followers[key] = total
                    if self._paused and total - min(self._followers.values()) <= FOLLOW_LAG // 2:
                        self._pause(False)
                    for start in range(0, len(text), FOLLOW_CHUNK):
                        yield text[start : start + FOLLOW_CHUNK]
                    continue
                if self.done:
                    return
                await activity.wait()
        finally:
            del self._followers[key]
            if not self._followers or self.output.total - min(self._followers.values()) <= FOLLOW_LAG // 2:
                self._pause(False)
