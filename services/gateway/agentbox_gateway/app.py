"""Assembles the gateway: planes, the doors (MCP, REST, pages, relays) and the guards in front of them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common import service
from agentbox_common.mcp_progress import RunningCalls
from agentbox_common.mcp_tasks import TaskStore
from agentbox_common.observability.tracing import untraced

from . import __version__, liveness
from .auth import browser_sessions, previews
from .auth.guards import ApiKeyGuard, HostGuard, OriginGuard, PageHeaders, anonymous
from .auth.tickets import TicketStore
from .auth.views import ViewGate, ViewGrants
from .doors.mcp.apps import AppViews
from .doors.mcp.server import build_mcp_routes, build_mcp_server
from .doors.mcp.tools import builtin_tools
from .doors.mcp.tools.registry import BuiltinRegistry
from .doors.relays import cdp, preview, preview_host
from .doors.shared.addresses import gateway_base
from .doors.shared.surface import ApiSurface
from .doors.web import live_view, pages, terminal
from .metrics import gateway_collector
from .planes import Planes
from .planes.browser.launch import BrowserLauncher, built_tools
from .planes.preview import PreviewHosts
from .settings import GatewaySettings
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


def readiness(
    upstreams: UpstreamRouter, launcher: BrowserLauncher, browser: frozenset[str]
) -> Callable[[Request], Awaitable[JSONResponse]]:
    """``GET /ready``: 200 once every registered MCP server serves its tools, so a client listing tools
    after it sees the whole catalogue; 503 naming those that do not yet (or no longer). The
    healthchecks and the Kubernetes readiness probe ask this. The browser program's servers
    (``browser``) count only with ``BROWSER_START_MODE=auto``; either way the body's ``browser``
    says whether they serve yet (``not started`` with ``manual`` until first used, ``starting``,
    ``ready``), so a client knows when the page tools answer. It is public, so with a key set a
    caller without it gets only ``status`` and ``waiting_count``: the upstreams' names and the
    browser's state are for key holders."""
    browser_waits = launcher.mode == "auto"

    async def ready(request: Request) -> JSONResponse:
        serving_not = await upstreams.waiting()
        waiting = serving_not if browser_waits else [name for name in serving_not if name not in browser]
        body: dict[str, object] = {"status": "starting" if waiting else "ready", "version": __version__}
        if not anonymous(request.scope):
            body["waiting"] = waiting
            if browser:
                body["browser"] = launcher.state(serving=not browser.intersection(serving_not)).value
        body["waiting_count"] = len(waiting)
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


def build_app(settings: GatewaySettings, *, clock: Callable[[], float] = time.monotonic) -> Starlette:
    """The gateway's ASGI app. ``clock`` is what its tickets and browser sessions expire by (a test
    moves it on instead of sleeping out a TTL)."""
    upstreams = UpstreamRouter.from_config(settings)
    browser = upstreams.served_from(settings.browser_url)
    launcher = BrowserLauncher(
        settings.browser_start_mode,
        settings.browser_url,
        registered=bool(browser),
        start_dir=settings.start_on_use_dir,
        timeout=settings.browser_start_timeout,
    )
    upstreams.serve_while_starting(browser, launcher, built_tools(settings.browser_tools_catalogue))
    planes = Planes.create(settings, own_cookies=previews.GATEWAY_COOKIES, launcher=launcher)
    registry = BuiltinRegistry(builtin_tools(planes))
    running = RunningCalls()  # the door's and the upstream forwarder's calls, for notifications/cancelled
    watch = ListWatch(upstreams, reserved=registry.names, settled_interval=settings.upstream_list_cache_ttl)
    planes.context.on_skills_change(watch.changed)
    tasks = TaskStore(retain_seconds=settings.task_retain_seconds, max_running=settings.command_max_running)
    mcp_server = build_mcp_server(registry, upstreams, running, watch, tasks, AppViews(gateway_base(settings)))
    if not settings.observability.traces:
        untraced(mcp_server)
    mcp_routes = build_mcp_routes(
        mcp_server,
        settings.host,
        upstreams=upstreams,
        builtins=frozenset(registry.names),
        running=running,
        changes=watch.bus,
    )

    @contextlib.asynccontextmanager
    async def running_planes() -> AsyncIterator[None]:
        await planes.egress.start()  # before Chromium asks for its PAC file
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

    tickets = TicketStore(ttl=settings.ticket_ttl, clock=clock)
    sessions = TicketStore(ttl=browser_sessions.SESSION_TTL, clock=clock)
    preview_hosts = PreviewHosts(settings.preview_host)
    preview_grants = previews.PreviewGrants(settings.ticket_ttl)
    view_grants = ViewGrants(settings.ticket_ttl, clock=clock)

    def rest_door() -> ASGIApp:
        from .doors.rest import build_rest_app, mcp_servers

        return build_rest_app(planes, settings, extra=[mcp_servers.router(registry, upstreams)])

    routes = [
        Route(
            "/ready",
            readiness(upstreams, launcher, browser),
            methods=["GET"],
        ),
        *mcp_routes,
        *cdp.routes(settings, launcher),
        *preview.routes(planes.preview, settings),
        *browser_sessions.routes(settings.api_key, tickets, sessions),
        *previews.routes(settings, preview_hosts, preview_grants),
        *pages.routes(registry, settings),
        *terminal.routes(planes.shell),
        *live_view.routes(settings, launcher),
        Mount("", app=LazyApp(rest_door)),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error})
    app.state.settings = settings
    app.state.planes = planes
    app.state.registry = registry
    app.state.upstreams = upstreams
    # Inside the key check: a caller without the key learns nothing, not even which surface is served.
    app.add_middleware(ApiSurface, v2_only=settings.api_surface == "v2")
    app.add_middleware(ApiKeyGuard, api_key=settings.api_key, tickets=tickets, sessions=sessions)
    app.add_middleware(OriginGuard, allowed_origins=settings.allowed_origins, keyed=bool(settings.api_key))
    app.add_middleware(PageHeaders, frame_ancestors=settings.frame_ancestors, exempt=preview.MOUNTS)
    # Outside the origin and key checks: a view's path loses its token before they (and the log) see it.
    app.add_middleware(ViewGate, grants=view_grants)
    # Before the gateway's own guards (and its page headers): on a preview host every path is the app's.
    app.add_middleware(
        preview_host.PreviewHost,
        door=preview.PreviewDoor(planes.preview, settings, absolute=True, sandboxed=False),
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
    parts: list[Callable[[], contextlib.AbstractAsyncContextManager[None]]] = [
        mcp_server.session_manager.run,
        running_planes,
        tasks.running,
    ]
    sandboxd = None
    if settings.sandboxd_enabled:  # imported only then: gRPC is some 20 MiB a gateway without it spares
        from .doors.sandboxd.server import Sandboxd, serving

        sandboxd = Sandboxd()
        parts.append(lambda: serving(planes, settings, sandboxd))
    app.state.sandboxd = sandboxd
    return service.as_service(
        app,
        "agentbox-gateway",
        settings.observability,
        health=liveness,
        parts=parts,
        collectors=[gateway_collector(planes, upstreams, sandboxd)],
    )
