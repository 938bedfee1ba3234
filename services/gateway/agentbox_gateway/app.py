"""Assembles the gateway: planes, the MCP door, the REST door, the CDP proxy and the guards."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.mcp_progress import RunningCalls
from agentbox_common.observability.tracing import untraced

from . import __version__, browser_auth, cdp_proxy, preview_host, preview_proxy, vnc, web
from .mcp_door import build_mcp_routes, build_mcp_server
from .mcp_tools import builtin_tools
from .mcp_tools.registry import ToolRegistry
from .metrics import gateway_collector
from .planes import Planes
from .planes.preview import PreviewHosts
from .rest import terminal
from .security import ApiKeyGuard, HostGuard, OriginGuard, PageHeaders
from .settings import GatewaySettings
from .tickets import TicketStore
from .upstreams import UpstreamRouter
from .upstreams.watch import ListWatch


class LazyApp:
    """An ASGI app built on its first request: the REST door (FastAPI and some 120 routes, about
    0.5 s of start-up and a few MiB) is paid for by the first REST call, not by a gateway that only
    serves MCP. It is built in a worker thread, so the event loop goes on serving ``/mcp`` meanwhile;
    concurrent first requests wait for that one build."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        self._build = build
        self._app: ASGIApp | None = None
        self._building = anyio.Lock()

    async def _built(self) -> ASGIApp:
        async with self._building:
            if self._app is None:
                self._app = await anyio.to_thread.run_sync(self._build)
        return self._app

    @property
    def routes(self) -> list[BaseRoute]:
        """The built app's routes (for ``Mount`` and route labels; none before the first request)."""
        return list(getattr(self._app, "routes", [])) if self._app is not None else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app if self._app is not None else await self._built()
        await app(scope, receive, send)


async def health(request: Request) -> JSONResponse:
    """Liveness: the gateway answers (cheap; asks nothing else)."""
    return JSONResponse({"status": "ok", "version": __version__})


def readiness(upstreams: UpstreamRouter) -> Callable[[Request], Awaitable[JSONResponse]]:
    """``GET /ready``: 200 once every registered MCP server (the browser program's among them) serves
    its tools, so a client listing tools after it sees the whole catalogue; 503 naming those that do
    not yet (or no longer). The healthchecks and the Kubernetes readiness probe ask this."""

    async def ready(request: Request) -> JSONResponse:
        waiting = await upstreams.waiting()
        body = {"status": "starting" if waiting else "ready", "version": __version__, "waiting": waiting}
        return JSONResponse(body, status_code=503 if waiting else 200)

    return ready


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Errors of the routes outside the REST door (``/static``, ``/vnc`` files) in the same envelope as
    ``/v1/*``'s, not Starlette's plain text. StaticFiles' 405 names no methods: it serves GET and HEAD."""
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405 and not any(name.lower() == "allow" for name in headers):
        headers["Allow"] = "GET, HEAD"
    body = {"success": False, "message": str(exc.detail), "data": None, "hint": None}
    return JSONResponse(body, status_code=exc.status_code, headers=headers)


def build_app(settings: GatewaySettings) -> Starlette:
    planes = Planes.create(settings)
    registry = ToolRegistry(builtin_tools(planes))
    upstreams = UpstreamRouter.from_config(settings)
    running = RunningCalls()  # the door's and the upstream forwarder's calls, for notifications/cancelled
    watch = ListWatch(upstreams, reserved=registry.names, settled_interval=settings.upstream_list_cache_ttl)
    mcp_server = build_mcp_server(registry, upstreams, running, watch)
    if not settings.observability.traces:
        untraced(mcp_server)
    mcp_routes = build_mcp_routes(
        mcp_server, settings.host, upstreams=upstreams, builtins=frozenset(registry.names), running=running
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_server.session_manager.run():
            await planes.proxy.start()  # before Chromium asks for its PAC file
            try:
                async with anyio.create_task_group() as background:
                    background.start_soon(watch.run)
                    try:
                        yield
                    finally:
                        watch.listen.close()  # listen streams end with their result, not cut off
                        background.cancel_scope.cancel()
            finally:
                try:
                    await planes.hooks.run("shutdown")  # while every plane still works
                finally:
                    await upstreams.aclose()
                    await planes.aclose()

    tickets = TicketStore(ttl=settings.ticket_ttl)
    sessions = TicketStore(ttl=browser_auth.SESSION_TTL)
    preview_hosts = PreviewHosts(settings.preview_host)
    preview_grants = preview_host.PreviewGrants(settings.ticket_ttl)

    def rest_door() -> ASGIApp:
        from .rest import build_rest_app, mcp_servers

        rest_app = build_rest_app(planes, settings)
        rest_app.include_router(mcp_servers.router(registry, upstreams))
        return rest_app

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/ready", readiness(upstreams), methods=["GET"]),
        *mcp_routes,
        *cdp_proxy.routes(settings),
        *preview_proxy.routes(planes.preview, settings),
        *browser_auth.routes(settings.api_key, tickets, sessions),
        *preview_host.routes(settings, preview_hosts, preview_grants),
        *web.routes(registry, settings),
        *terminal.routes(planes.shell),
        *vnc.routes(settings),
        Mount("", app=LazyApp(rest_door)),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    app.state.settings = settings
    app.state.planes = planes
    app.state.registry = registry
    app.state.upstreams = upstreams
    app.add_middleware(ApiKeyGuard, api_key=settings.api_key, tickets=tickets, sessions=sessions)
    app.add_middleware(OriginGuard, allowed_origins=settings.allowed_origins, keyed=bool(settings.api_key))
    app.add_middleware(PageHeaders, frame_ancestors=settings.frame_ancestors, exempt=preview_proxy.MOUNTS)
    # Before the gateway's own guards (and its page headers): on a preview host every path is the app's.
    app.add_middleware(
        preview_host.PreviewHost,
        door=preview_proxy.PreviewDoor(planes.preview, settings, absolute=True, sandboxed=False),
        hosts=preview_hosts,
        api_key=settings.api_key,
        grants=preview_grants,
        allowed_origins=settings.allowed_origins,
    )
    # Outside the other guards: a rebound page is refused before anything else answers it.
    app.add_middleware(
        HostGuard,
        allowed_hosts=settings.allowed_hosts,
        active=not settings.api_key or bool(settings.allowed_hosts),
        preview_host=lambda host: preview_hosts.port_of(host) is not None,
    )
    metrics = settings.observability.install(app, "agentbox-gateway")
    if metrics is not None:
        metrics.add_collector(gateway_collector(planes, upstreams))
    return app
