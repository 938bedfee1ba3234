"""Tells listening clients when the aggregated tool list changes (the browser's tools arriving, an
upstream appearing or going away), without making every idle gateway poll its upstreams.

2026-07-28 clients listen with ``subscriptions/listen`` (the SDK's :class:`ListenHandler`); while at
least one listens, :class:`ListWatch` lists the upstreams every second while one is still starting or
down, and every ``list_cache_ttl`` seconds once all answer (a fresh list is reused and costs nothing),
and each listing that publishes another set of names sends ``notifications/tools/list_changed``. With
nobody listening (or no upstream registered) the loop is idle, with no timer: it waits for the first
listener, and the list is only asked for when a client asks."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent, ToolsListChanged

from .router import UpstreamRouter

#: Seconds between listings while an upstream is starting or down.
WAITING_INTERVAL = 1.0


class CountedBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, counting its open listen streams, which can be awaited coming and
    going (on the event loop, where the SDK subscribes and unsubscribes)."""

    def __init__(self) -> None:
        super().__init__()
        self.listening = 0
        #: Set when the count changes; made by the first waiter (an Event needs a running loop).
        self._change: anyio.Event | None = None

    def _counted(self, step: int) -> None:
        self.listening += step
        if self._change is not None:
            self._change.set()
            self._change = None

    async def _until(self, listened: bool) -> None:
        while bool(self.listening) != listened:
            if self._change is None:
                self._change = anyio.Event()
            await self._change.wait()

    async def until_listened(self) -> None:
        """Return once a listen stream is open (at once if one is)."""
        await self._until(True)

    async def until_deserted(self) -> None:
        """Return once no listen stream is open (at once if none is)."""
        await self._until(False)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self._counted(1)
        done = False

        def counted_unsubscribe() -> None:
            nonlocal done
            if not done:
                done = True
                self._counted(-1)
            unsubscribe()

        return counted_unsubscribe


class ListWatch:
    """The bus and listen handler of the MCP door, and the loop that keeps the list current for them."""

    def __init__(self, router: UpstreamRouter, reserved: Iterable[str], settled_interval: float) -> None:
        self.router = router
        self.reserved = set(reserved)
        self.settled_interval = max(settled_interval, WAITING_INTERVAL)
        self.bus = CountedBus()
        self.listen = ListenHandler(self.bus)
        router.on_change(self.changed)

    async def changed(self) -> None:
        """Tell the listening clients the tool list changed (an upstream's list, or a built-in's
        description: the skills ``sandbox_load_skill`` names)."""
        await self.bus.publish(ToolsListChanged())

    async def run(self) -> None:
        """List while someone listens; runs until cancelled (the gateway's lifespan). Without an
        upstream there is nothing to watch: it returns at once."""
        if not self.router:
            return
        while True:
            await self.bus.until_listened()
            await self.router.list_tools(self.reserved)
            # the next listing, unless the last listener leaves first
            with anyio.move_on_after(WAITING_INTERVAL if not self.router.settled else self.settled_interval):
                await self.bus.until_deserted()
