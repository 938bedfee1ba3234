"""How a plane hands out output while a long operation still runs (the doors turn it into MCP
progress notifications or SSE events)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

logger = logging.getLogger(__name__)

#: Receives each new chunk of output, in order, while the operation runs; an exception it raises
#: (the client went away) stops the operation.
OutputSink = Callable[[str], Awaitable[None]]

#: Characters a relay holds for a slow sink; older ones are dropped (with a marker) beyond it.
RELAY_KEEP = 256_000


class OutputRelay:
    """Carries text pushed synchronously (from a pipe reader) to an async :data:`OutputSink` in its
    own task, holding at most ``keep`` characters, so a slow client never grows the gateway's
    memory nor stalls the reader."""

    def __init__(self, sink: OutputSink, keep: int = RELAY_KEEP) -> None:
        self._sink = sink
        self._keep = keep
        self._pending: list[str] = []
        self._pending_len = 0
        self._dropped = 0
        self._ready = asyncio.Event()
        self._closed = False

    def push(self, text: str) -> None:
        if not text or self._closed:
            return
        self._pending.append(text)
        self._pending_len += len(text)
        while self._pending_len > self._keep and len(self._pending) > 1:
            old = self._pending.pop(0)
            self._pending_len -= len(old)
            self._dropped += len(old)
        self._ready.set()

    def _take(self) -> str:
        text = "".join(self._pending)
        if self._dropped:
            text = f"[... {self._dropped} characters not streamed ...]\n" + text
        self._pending, self._pending_len, self._dropped = [], 0, 0
        self._ready.clear()
        return text

    async def _pump(self) -> None:
        while True:
            await self._ready.wait()
            text = self._take()
            if text:
                try:
                    await self._sink(text)
                except Exception:  # the client cannot take more: the operation goes on unwatched
                    logger.debug("output sink failed; streaming stops", exc_info=True)
                    self._closed = True
                    return
            if self._closed and not self._pending:
                return

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[OutputRelay]:
        """Pump while the block runs; once it ends, deliver what is left."""
        pump = asyncio.create_task(self._pump())
        try:
            yield self
        except BaseException:
            pump.cancel()
            raise
        self._closed = True
        self._ready.set()
        await pump
