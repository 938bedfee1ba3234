"""The standalone MCP-mode server (port 8081): MCP at ``/`` and ``/mcp`` (``/mcp/`` too), all without
redirects, plus a public ``GET /healthz``. Its workspace lock is a file lock under
``AICODEBOX_STATE_DIR``, so cron and Telegram mode in other processes keep out of a workspace a run
holds, and it out of theirs (API mode mounts the same endpoint next to ``/run`` with the same lock)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .adapters import Adapter, load_adapter
from .locks import WorkspaceLocks
from .mcp_server import McpEndpoint, McpTokenGuard, build_mcp_asgi
from .run_stats import RUN_STATS
from .settings import McpModeSettings


def healthz_route(adapter: Adapter) -> Route:
    """``GET /healthz`` → ``{"ok": true, "adapter": <name>}``; public, never touches the agent."""

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "adapter": adapter.name})

    return Route("/healthz", healthz, methods=["GET"])


def mcp_routes(endpoint: McpEndpoint, paths: tuple[str, ...]) -> list[Route]:
    """Explicit routes (every method) so each spelling is served as is, never redirected."""
    return [Route(path, endpoint.app) for path in paths]


def build_app(
    settings: McpModeSettings, adapter: Adapter | None = None, locks: WorkspaceLocks | None = None
) -> Starlette:
    adapter = adapter or load_adapter(settings)
    locks = locks or WorkspaceLocks(settings.state_dir / "locks", settings.max_concurrent_runs)
    endpoint = build_mcp_asgi(settings, locks, adapter)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint.session_manager.run():
            yield

    app = Starlette(
        routes=[healthz_route(adapter), *mcp_routes(endpoint, ("/", "/mcp", "/mcp/"))],
        lifespan=lifespan,
    )
    app.state.mcp = endpoint
    metrics = settings.observability.install(
        app, "agentbox-mcp-mode", guard=lambda inner: McpTokenGuard(inner, settings.token)
    )
    if metrics is not None:
        metrics.add_collector(RUN_STATS.collect)
    return app
