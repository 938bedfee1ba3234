"""One command run in a session: its output streams, its end, and waits on either."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from .output import OutputBuffer
from .stdin import CommandInput

T = TypeVar("T")

#: The most characters :meth:`CommandRecord.follow` yields at once (one progress message, one SSE event).
FOLLOW_CHUNK = 64_000
#: A follower this many characters behind pauses the command's output (well under what the
#: buffer keeps, so a follower never misses any).
FOLLOW_LAG = 128_000


@dataclass(frozen=True)
class StreamChunk:
    """New output of one stream: ``text`` starts at character ``offset`` of ``stream``."""

    stream: str
    offset: int
    text: str


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
    finished_at: datetime | None = None

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

    @property
    def retained(self) -> int:
        """Characters of output held in memory for this command (all of its buffers)."""
        buffers = {id(b): b for b in (self.output, self.stdout, self.stderr)}
        return sum(buffer.retained for buffer in buffers.values())

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
        read_to = offset

        def drain(key: object) -> list[str]:
            nonlocal read_to
            total = self.output.total
            if total <= read_to:
                return []
            text = self.output.read(read_to)
            read_to = total
            self._caught_up(key, total)
            return [text[start : start + FOLLOW_CHUNK] for start in range(0, len(text), FOLLOW_CHUNK)]

        async for chunk in self._followed(drain, offset):
            yield chunk

    async def follow_streams(self, stdout_offset: int = 0, stderr_offset: int = 0) -> AsyncIterator[StreamChunk]:
        """stdout and stderr apart, from the offsets on, as they are printed, until the end: like
        :meth:`follow`, with the same backpressure (a follower's place is the interleaved output's
        total when it last caught up with both streams)."""
        offsets = {"stdout": stdout_offset, "stderr": stderr_offset}

        def drain(key: object) -> list[StreamChunk]:
            caught_up = self.output.total
            chunks = []
            for name, buffer in (("stdout", self.stdout), ("stderr", self.stderr)):
                start = offsets[name]
                if buffer.total > start:
                    text = buffer.read(start)
                    offsets[name] = buffer.total
                    chunks += [
                        StreamChunk(name, start + at, text[at : at + FOLLOW_CHUNK])
                        for at in range(0, len(text), FOLLOW_CHUNK)
                    ]
            self._caught_up(key, caught_up)
            return chunks

        async for chunk in self._followed(drain, 0):
            yield chunk

    async def _followed(self, drain: Callable[[object], list[T]], place: int) -> AsyncIterator[T]:
        """What ``drain`` takes whenever the command prints, until it ends; ``drain`` records how far
        this follower has read (its ``key``'s place, which the backpressure reads)."""
        key = object()
        self._followers[key] = place
        try:
            while True:
                activity = self._activity
                chunks = drain(key)
                for chunk in chunks:
                    yield chunk
                if chunks:
                    continue
                if self.done:
                    return
                await activity.wait()
        finally:
            self._unfollow(key)

    def _caught_up(self, key: object, total: int) -> None:
        """A follower has read up to ``total``: the reader resumes once the slowest is near enough."""
        self._followers[key] = total
        if self._paused and self._lag_is_small():
            self._pause(False)

    def _lag_is_small(self) -> bool:
        return self.output.total - min(self._followers.values()) <= FOLLOW_LAG // 2

    def _unfollow(self, key: object) -> None:
        del self._followers[key]
        if not self._followers or self._lag_is_small():
            self._pause(False)
