"""The upstream half of the catalogue: lists every registered upstream concurrently, publishes their
tools under the seed's naming rules and routes each call back through a table from published name to
(upstream, original name), never by re-parsing a name that two upstreams might both claim.

A dead, slow or broken upstream only ever costs its own tools: it is left out of ``tools/list`` after
at most the list timeout, and a call to it is an ``isError`` result naming it and the failure.

An upstream's list is reused for ``list_cache_ttl`` seconds, so ``tools/list`` costs the same however
many upstreams are registered, but only while the upstream is still reachable (a held idle
connection, free to check, that its exit closes): a killed upstream is absent from the very next
``tools/list``, as the seed says. A call to it that fails (unreachable, a JSON-RPC error, an invalid
result) drops its cached list, and the next ``tools/list`` asks it again.

Start-up and changes are told, not guessed: :meth:`UpstreamRouter.waiting` names the upstreams not
serving their tools (the gateway's readiness answer), and every listing that publishes another set of
names than the one before tells the ``on_change`` listeners (``notifications/tools/list_changed``).

An upstream that starts on use (the browser program, :meth:`UpstreamRouter.serve_while_starting`)
publishes the tools it was built with until it first answers, so the list is whole from the start
and does not change when it comes; a call to it waits for it to start (and starts it)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple, Protocol

from mcp import types
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict, ValidationError

from agentbox_common.errors import Unavailable

from ..settings import GatewaySettings
from .client import ProgressRelay, UpstreamClient, UpstreamRpcError, UpstreamTimeout, UpstreamUnavailable
from .config import UpstreamConfig, parse_upstreams

logger = logging.getLogger(__name__)

#: An upstream that was listed recently but is now merely slow keeps its tools this long, so a busy
#: server does not flicker in and out of the catalogue. A refused connection drops them at once.
STALE_LIST_TTL = 30.0
#: The state of an upstream that starts on use and has not been asked for yet.
NOT_STARTED = "not started: it starts on first use"


class StartsOnUse(Protocol):
    """An upstream's starter (the browser's :class:`~agentbox_gateway.planes.browser.launch.BrowserLauncher`)."""

    @property
    def requested(self) -> bool: ...

    @property
    def up(self) -> bool: ...

    def note_up(self) -> None: ...

    async def ensure(self) -> None: ...


class Route(NamedTuple):
    """Where a published name goes: the upstream, its own name for the tool, and the tool's input
    schema as last listed (``None`` when the name was only matched by its prefix)."""

    client: UpstreamClient
    original: str
    input_schema: dict[str, Any] | None = None


class ForwardedResult(types.CallToolResult):
    """An upstream's ``tools/call`` result as it was sent: only the fields the upstream set are
    dumped (no ``isError: false`` is added) and unknown fields are kept on the model. The SDK then
    shapes it for the client's protocol version, which keeps every field that version defines."""

    model_config = ConfigDict(extra="allow")

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        kwargs["exclude_unset"] = True
        dumped = super().model_dump(**kwargs)
        # Required on the 2026-07-28 wire (the SDK drops it for older clients).
        dumped.setdefault("resultType" if kwargs.get("by_alias") else "result_type", self.result_type)
        return dumped


def _failure(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    return f"{location}: {error['msg']}" if location else error["msg"]


class UpstreamRouter:
    """The aggregated upstreams, in registration order."""

    def __init__(
        self, configs: list[UpstreamConfig], *, list_timeout: float, call_timeout: float, list_cache_ttl: float = 0.0
    ) -> None:
        self._clients = [
            UpstreamClient(config, list_timeout=list_timeout, call_timeout=call_timeout) for config in configs
        ]
        self._routes: dict[str, Route] = {}
        self._last_good: dict[str, tuple[float, list[dict[str, Any]]]] = {}
        self.list_cache_ttl = list_cache_ttl
        #: Upstreams whose last good list is fresh enough to publish without asking them.
        self._fresh: set[str] = set()
        #: "" while an upstream answers, else the reason it does not; logged when it changes.
        self._state: dict[str, str] = {}
        self._noted: set[tuple[str, str]] = set()
        #: The names the last listing published (None before the first), to see the list change.
        self._published: frozenset[str] | None = None
        self._on_change: list[Callable[[], Awaitable[None]]] = []
        #: Upstreams that start on use: their starter and the tools they publish until they answer.
        self._starting: dict[str, tuple[StartsOnUse, list[dict[str, Any]]]] = {}

    def __bool__(self) -> bool:
        """Whether any upstream is registered."""
        return bool(self._clients)

    @property
    def names(self) -> list[str]:
        """The registered upstreams' names, in registration order."""
        return [client.name for client in self._clients]

    def served_from(self, base_url: str) -> frozenset[str]:
        """The upstreams whose URL is at ``base_url`` (the image registers the browser program so)."""
        base = base_url.rstrip("/")
        return frozenset(
            client.name
            for client in self._clients
            if client.config.url == base or client.config.url.startswith(f"{base}/")
        )

    def serve_while_starting(self, names: Iterable[str], starter: StartsOnUse, tools: list[dict[str, Any]]) -> None:
        """Publish ``tools`` for the upstreams ``names`` until they first answer, and have each call to
        them wait for ``starter`` (which starts them when they wait for their first use)."""
        for name in names:
            self._starting[name] = (starter, tools)

    @classmethod
    def from_config(cls, settings: GatewaySettings) -> UpstreamRouter:
        return cls(
            parse_upstreams(settings.mcp_servers),
            list_timeout=settings.upstream_list_timeout,
            call_timeout=settings.upstream_call_timeout,
            list_cache_ttl=settings.upstream_list_cache_ttl,
        )

    def _note_once(self, upstream: str, message: str) -> None:
        if (upstream, message) not in self._noted:
            self._noted.add((upstream, message))
            logger.warning("upstream %s: %s", upstream, message)

    def _set_state(self, client: UpstreamClient, reason: str, tools: int = 0) -> None:
        previous = self._state.get(client.name)
        self._state[client.name] = reason
        if reason == NOT_STARTED:
            return
        if reason and reason != previous:
            logger.warning("upstream %s unavailable: %s", client.name, reason)
        elif not reason and previous != "":
            logger.info("upstream %s answers: %d tools", client.name, tools)

    async def _fetch(self, client: UpstreamClient) -> list[dict[str, Any]]:
        """One upstream's raw tools, or none; never raises, never outlasts the list timeout. An
        upstream that starts on use and has not answered yet gives the tools it was built with."""
        starting = self._starting.get(client.name)
        if starting is not None and not starting[0].up:
            if not starting[0].requested:
                self._set_state(client, NOT_STARTED)
                return starting[1]
            tools = await self._ask(client)
            if not self._state[client.name]:
                starting[0].note_up()
                return tools
            return starting[1]
        return await self._ask(client)

    async def _ask(self, client: UpstreamClient) -> list[dict[str, Any]]:
        cached = self._last_good.get(client.name)
        if client.name in self._fresh and cached is not None and time.monotonic() - cached[0] < self.list_cache_ttl:
            if await client.reachable():
                return cached[1]
        self._fresh.discard(client.name)
        try:
            tools = await client.list_tools()
        except UpstreamTimeout as exc:
            stale = self._last_good.get(client.name)
            if stale is not None and time.monotonic() - stale[0] <= STALE_LIST_TTL:
                self._set_state(client, f"{exc}; keeping its last list for up to {STALE_LIST_TTL:g} s")
                return stale[1]
            self._set_state(client, str(exc))
            return []
        except UpstreamRpcError as exc:
            self._set_state(client, f"tools/list error {exc.error.get('code')}: {exc}")
        except UpstreamUnavailable as exc:
            self._set_state(client, str(exc))
        except Exception as exc:  # one upstream's surprise never fails tools/list
            logger.exception("upstream %s: tools/list failed", client.name)
            self._set_state(client, f"{type(exc).__name__}: {exc}")
        else:
            self._last_good[client.name] = (time.monotonic(), tools)
            self._fresh.add(client.name)
            self._set_state(client, "", len(tools))
            return tools
        self._last_good.pop(client.name, None)
        return []

    def _publish(self, client: UpstreamClient, raw: Any, taken: set[str]) -> types.Tool | None:
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name:
            self._note_once(client.name, "a tool without a name was dropped")
            return None
        published = client.config.publish(name)
        if published is None:
            self._note_once(
                client.name,
                f"tool {name!r} dropped: the entry has no prefix and the name does "
                f"not start with {client.config.name_prefix!r}",
            )
            return None
        if published in taken:
            self._note_once(
                client.name,
                f"tool {published!r} dropped: a built-in tool or an earlier upstream already publishes that name",
            )
            return None
        try:
            return types.Tool.model_validate({**raw, "name": published})
        except ValidationError as exc:
            self._note_once(client.name, f"tool {name!r} dropped: invalid definition ({_first_error(exc)})")
            return None

    async def list_tools(self, reserved: set[str]) -> list[types.Tool]:
        """Every upstream's tools in registration order; names in ``reserved`` (built-ins) win."""
        if not self._clients:
            return []
        lists = await asyncio.gather(*(self._fetch(client) for client in self._clients))
        tools: list[types.Tool] = []
        routes: dict[str, Route] = {}
        taken = set(reserved)
        for client, raw_tools in zip(self._clients, lists, strict=True):
            for raw in raw_tools:
                tool = self._publish(client, raw, taken)
                if tool is not None:
                    tools.append(tool)
                    taken.add(tool.name)
                    routes[tool.name] = Route(client, raw["name"], tool.input_schema)
        self._routes = routes
        previous, self._published = self._published, frozenset(routes)
        if previous is not None and previous != self._published:
            for listener in self._on_change:
                await listener()
        return tools

    def on_change(self, listener: Callable[[], Awaitable[None]]) -> None:
        """Await ``listener`` whenever a listing publishes another set of tool names than the last."""
        self._on_change.append(listener)

    @property
    def settled(self) -> bool:
        """Whether every upstream answered its last ``tools/list`` (none is starting, down or slow;
        one that waits for its first use is as settled as it will be)."""
        return all(self._state.get(client.name, "starting") in ("", NOT_STARTED) for client in self._clients)

    async def waiting(self) -> list[str]:
        """The upstreams not serving their tools right now, in registration order. Each is asked as
        ``tools/list`` asks it (a fresh list is reused), so this costs what a listing costs."""
        await asyncio.gather(*(self._fetch(client) for client in self._clients))
        return [client.name for client in self._clients if self._state.get(client.name, "starting")]

    def health(self) -> dict[str, bool]:
        """Whether each upstream answered when last asked (only those asked since start-up)."""
        return {name: not reason for name, reason in self._state.items()}

    def route(self, name: str) -> Route | None:
        """The table's entry, else the first upstream whose prefix the name carries: a tool of an
        upstream that was down at the last listing still gets a call (and an ``isError`` if down)."""
        route = self._routes.get(name)
        if route is not None:
            return route
        for client in self._clients:
            original = client.config.original(name)
            if original is not None:
                return Route(client, original)
        return None

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The published tool's input schema as last listed, without asking any upstream."""
        route = self._routes.get(name)
        return route.input_schema if route is not None else None

    async def forward(
        self, route: Route, arguments: dict[str, Any] | None, on_progress: ProgressRelay | None = None
    ) -> dict[str, Any]:
        """The upstream's ``tools/call`` result exactly as sent, or an ``isError`` result naming the
        upstream and the failure. :class:`UpstreamRpcError` when it answered with a JSON-RPC error.
        ``on_progress`` relays the upstream's progress notifications."""
        client, original = route.client, route.original
        starting = self._starting.get(client.name)
        if starting is not None:
            try:
                await starting[0].ensure()
            except Unavailable as exc:
                return _failure(f"upstream {client.name} unavailable: {exc}")
        try:
            raw = await client.call_tool(original, arguments, on_progress)
        except UpstreamUnavailable as exc:
            logger.warning("upstream %s: tools/call %s failed: %s", client.name, original, exc)
            self._fresh.discard(client.name)
            self._set_state(client, str(exc))
            return _failure(f"upstream {client.name} unavailable: {exc}")
        except UpstreamRpcError:
            self._fresh.discard(client.name)  # perhaps its tools changed
            raise
        try:
            types.CallToolResult.model_validate(raw)
        except ValidationError as exc:
            self._fresh.discard(client.name)
            reason = f"upstream {client.name} sent an invalid tools/call result ({_first_error(exc)})"
            logger.warning("%s", reason)
            return _failure(reason)
        return raw

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, on_progress: ProgressRelay | None = None
    ) -> types.CallToolResult | None:
        """Forward ``name`` to its upstream for the MCP door; ``None`` when no upstream can own it."""
        route = self.route(name)
        if route is None:
            return None
        try:
            return ForwardedResult.model_validate(await self.forward(route, arguments, on_progress))
        except UpstreamRpcError as exc:
            raise MCPError(**exc.error_data()) from None

    async def aclose(self) -> None:
        await asyncio.gather(*(client.aclose() for client in self._clients))
