"""Tells listening clients when the aggregated tool list changes (the browser's tools arriving, an
upstream appearing or going away), without making every idle gateway poll its upstreams.

2026-07-28 clients listen with ``subscriptions/listen`` (the SDK's :class:`ListenHandler`); while at
least one listens, :class:`ListWatch` lists the upstreams every second while one is still starting or
down, and every ``list_cache_ttl`` seconds once all answer (a fresh list is reused and costs nothing),
and each listing that publishes another set of names sends ``notifications/tools/list_changed``. With
nobody listening, the list is only asked for when a client asks."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent, ToolsListChanged

from .router import UpstreamRouter

#: Seconds between listings while an upstream is starting or down.
WAITING_INTERVAL = 1.0


class CountedBus(InMemorySubscriptionBus):
    """The SDK's in-process bus, counting its open listen streams."""

    def __init__(self) -> None:
        super().__init__()
        self.listening = 0

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.listening += 1
        done = False

        def counted_unsubscribe() -> None:
            nonlocal done
            if not done:
                done = True
                self.listening -= 1
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
        router.on_change(self._changed)

    async def _changed(self) -> None:
        await self.bus.publish(ToolsListChanged())

    async def run(self) -> None:
        """List while someone listens; runs until cancelled (the gateway's lifespan)."""
        while True:
            if self.bus.listening and self.router:
                await self.router.list_tools(self.reserved)
                await anyio.sleep(WAITING_INTERVAL if not self.router.settled else self.settled_interval)
            else:
                await anyio.sleep(WAITING_INTERVAL)
