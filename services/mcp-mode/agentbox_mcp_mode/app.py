"""The standalone MCP-mode server (port 8081): MCP at ``/`` and ``/mcp`` (``/mcp/`` too), all without
redirects, plus a public ``GET /healthz``. It has its own workspace lock, so it keeps MCP runs apart
from each other only (API mode mounts the same endpoint next to ``/run`` with one shared lock)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .adapters import Adapter, load_adapter
from .locks import WorkspaceLocks
from .mcp_server import McpEndpoint, build_mcp_asgi
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
    endpoint = build_mcp_asgi(settings, locks or WorkspaceLocks(settings.max_concurrent_runs), adapter)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with endpoint.session_manager.run():
            yield

    app = Starlette(
        routes=[healthz_route(adapter), *mcp_routes(endpoint, ("/", "/mcp", "/mcp/"))],
        lifespan=lifespan,
    )
    app.state.mcp = endpoint
    return app
