"""The MCP door's list watcher costs nothing while nobody listens: no timer of its own (no wake-up
every second), until a listen stream opens; then it lists on its interval, and once the last
listener leaves it is idle again at once."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest

from agentbox_gateway.upstreams import UpstreamRouter
from agentbox_gateway.upstreams.config import parse_upstreams
from agentbox_gateway.upstreams.watch import WAITING_INTERVAL, ListWatch
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio


def down_router() -> UpstreamRouter:
    """One registered upstream that refuses connections (listing it fails at once)."""
    raw = {"down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "prefix": "down"}}
    return UpstreamRouter(parse_upstreams(raw), list_timeout=2, call_timeout=2)


class Timers:
    """The timers the event loop is asked for from one task from now on (every sleep and timeout
    goes through ``loop.call_at``), and an event set at each."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.handles: list[asyncio.TimerHandle] = []
        self.asked = asyncio.Event()
        loop = asyncio.get_running_loop()
        real = loop.call_at

        def call_at(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            handle = real(when, *args, **kwargs)
            if self.task is not None and asyncio.current_task() is self.task:
                self.handles.append(handle)
                self.asked.set()
            return handle

        monkeypatch.setattr(loop, "call_at", call_at)


async def settle() -> None:
    """Let the watch task run until it waits."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_no_listener_no_timer_then_listing_then_idle_again(monkeypatch: pytest.MonkeyPatch) -> None:
    router = down_router()
    watch = ListWatch(router, reserved=(), settled_interval=60)
    timers = Timers(monkeypatch)
    task = timers.task = asyncio.create_task(watch.run())
    try:
        await settle()
        await asyncio.sleep(WAITING_INTERVAL * 1.5)  # a loop waking every second would have by now
        assert timers.handles == [] and router.health() == {}  # nothing set, nothing asked

        unsubscribe = watch.bus.subscribe(lambda event: None)
        with anyio.fail_after(10):
            await timers.asked.wait()
        assert router.health() == {"down": False}  # listed once someone listens
        assert not timers.handles[-1].cancelled()  # then the next listing, while the upstream is down

        unsubscribe()
        await settle()
        assert all(timer.cancelled() for timer in timers.handles)  # idle again at once, no timer left
        assert not task.done()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_without_upstreams_there_is_nothing_to_watch() -> None:
    watch = ListWatch(UpstreamRouter([], list_timeout=2, call_timeout=2), reserved=(), settled_interval=60)
    with anyio.fail_after(1):
        await watch.run()
