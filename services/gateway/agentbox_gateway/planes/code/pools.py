"""Warm workers for stateless calls, so a call pays neither an interpreter start-up nor a neighbour's
leftovers.

Python: reusable fork servers (each call is a fresh fork, the server itself stays clean); one is kept
warm and more are started when calls overlap. JavaScript: single-use ``node`` processes, started ahead
of need and replaced in the background after each call. A pool starts nothing until its first call
(or ``warm``): that call pays its worker's start-up. Python sessions' Jupyter kernels come from a
``KernelPool`` of started spares."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

from .kernel import Kernel
from .worker import Worker

logger = logging.getLogger(__name__)


class _Spare(Protocol):
    async def close(self) -> None: ...


S = TypeVar("S", bound=_Spare)


async def fill_spares(
    idle: list[S], spares: int, start: Callable[[], Awaitable[S]], closed: Callable[[], bool], what: str
) -> None:
    """Start spares into ``idle`` until there are ``spares``; one that cannot start is left to the
    call that needs it to report, one started as the pool closed is closed again."""
    while not closed() and len(idle) < spares:
        try:
            spare = await start()
        except Exception as exc:
            logger.warning("could not start a spare %s: %s", what, exc)
            return
        if closed():
            await spare.close()
            return
        idle.append(spare)


class WorkerPool:
    def __init__(
        self, spawn: Callable[[], Awaitable[Worker]], *, reusable: bool, spares: int = 1, limit: int = 8
    ) -> None:
        self._spawn = spawn
        self._reusable = reusable
        self._spares = spares
        self._limit = limit
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[Worker] = []
        self._busy: set[Worker] = set()
        self._refill: asyncio.Task[None] | None = None
        self._retiring: set[asyncio.Task[None]] = set()
        self._closed = False

    def warm(self) -> None:
        """Start the spare workers in the background (a no-op when they are there or coming)."""
        if self._closed or (self._refill is not None and not self._refill.done()):
            return
        if len([w for w in self._idle if w.alive]) < self._spares:
            self._refill = asyncio.create_task(self._fill())

    async def _fill(self) -> None:
        await fill_spares(self._idle, self._spares, self._spawn, lambda: self._closed, "interpreter")

    async def prepare(self) -> None:
        """Make sure one worker is ready now, raising when it cannot start."""
        if not any(worker.alive for worker in self._idle):
            self._idle.append(await self._spawn())

    @contextlib.asynccontextmanager
    async def worker(self) -> AsyncIterator[Worker]:
        """A warm worker for one call (started now when none is ready); at most ``limit`` at a time."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._limit)
        async with self._slots:
            worker = await self._take()
            self._busy.add(worker)
            try:
                yield worker
            finally:
                self._busy.discard(worker)
                await self._give_back(worker)

    async def _take(self) -> Worker:
        worker = await self._pop_idle()
        if worker is None and self._refill is not None and not self._refill.done():
            await asyncio.shield(self._refill)  # a spare is on its way: cheaper than starting another
            worker = await self._pop_idle()
        if worker is None:
            worker = await self._spawn()
        if not self._reusable:
            self.warm()
        return worker

    async def _pop_idle(self) -> Worker | None:
        while self._idle:
            worker = self._idle.pop(0)
            if worker.alive:
                return worker
            await worker.close()
        return None

    async def _give_back(self, worker: Worker) -> None:
        if self._reusable and worker.alive and not self._closed:
            self._idle.append(worker)
            return
        if self._reusable:
            await worker.close()
        else:  # let it exit on its own time, not the caller's
            task = asyncio.create_task(worker.retire())
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)
        self.warm()

    async def aclose(self) -> None:
        self._closed = True
        if self._refill is not None:
            self._refill.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refill
        workers = [*self._idle, *self._busy]
        self._idle.clear()
        await asyncio.gather(*(worker.close() for worker in workers), *self._retiring, return_exceptions=True)


class KernelPool:
    """``spares`` started kernels waiting for the sessions to come (``AIO_KERNEL_PREWARM``): a new
    session takes one and pays no kernel start-up; the pool refills in the background."""

    def __init__(self, start: Callable[[], Awaitable[Kernel]], *, spares: int) -> None:
        self._start = start
        self._spares = spares
        self._idle: list[Kernel] = []
        self._refill: asyncio.Task[None] | None = None
        self._closed = False

    def warm(self) -> None:
        if self._closed or self._spares <= 0 or (self._refill is not None and not self._refill.done()):
            return
        if len(self._idle) < self._spares:
            self._refill = asyncio.create_task(self._fill())

    async def _fill(self) -> None:
        await fill_spares(self._idle, self._spares, self._start, lambda: self._closed, "kernel")

    async def take(self) -> Kernel:
        """A started kernel: a spare (waiting for the one on its way), else one started now."""
        if not self._idle and self._refill is not None and not self._refill.done():
            await asyncio.shield(self._refill)
        while self._idle:
            kernel = self._idle.pop(0)
            if kernel.alive:
                self.warm()
                return kernel
            await kernel.close()
        kernel = await self._start()
        self.warm()
        return kernel

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def aclose(self) -> None:
        self._closed = True
        if self._refill is not None:
            self._refill.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refill
        kernels, self._idle = self._idle, []
        await asyncio.gather(*(kernel.close() for kernel in kernels), return_exceptions=True)
