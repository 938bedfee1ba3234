"""A client that goes away takes its agent with it.

Starlette does not cancel a handler when its client disconnects, so a sync ``/run`` or a
non-streaming chat completion watches the connection itself (:func:`finish_unless_disconnected`)
and cancels the run — which kills the agent's process group — when the client leaves first.

A streaming answer (:class:`CleanupStreamingResponse`) is cancelled by Starlette on disconnect;
the response then closes its body generator at once (closing the adapter stream, which kills the
agent) and runs its cleanup (lock release, ephemeral workspace removal) however it ended, even if
the body was never iterated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send


async def until_disconnected(request: Request) -> None:
    """Return when the client closes the connection (the request body must have been read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def finish_unless_disconnected(request: Request, task: asyncio.Task[Any]) -> bool:
    """Wait for ``task``; if the client disconnects first (or this handler is cancelled), cancel the
    task and wait for it to wind down. True when the task finished on its own."""
    watcher = asyncio.create_task(until_disconnected(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    return not task.cancelled()


class CleanupStreamingResponse(StreamingResponse):
    """A streaming response that always closes its generator and then awaits ``cleanup``."""

    def __init__(
        self,
        content: AsyncGenerator[str, None],
        cleanup: Callable[[], Awaitable[None]],
        **kwargs: Any,
    ) -> None:
        super().__init__(content, **kwargs)
        self._generator = content
        self._cleanup = cleanup

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self._generator.aclose()
                finally:
                    await self._cleanup()
