"""The standalone MCP-mode server (port 8081): MCP at ``/`` and ``/mcp`` (``/mcp/`` too), all without
redirects, plus a public ``GET /healthz``. Its workspace lock is a file lock under
``AICODEBOX_STATE_DIR``, so cron and Telegram mode in other processes keep out of a workspace a run
holds, and it out of theirs (API mode mounts the same endpoint next to ``/run`` with the same lock)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route

from agentbox_common import service

from .adapters import Adapter, load_adapter
from .locks import WorkspaceLocks
from .mcp_server import McpEndpoint, McpTokenGuard, build_mcp_asgi
from .run_stats import RUN_STATS
from .settings import McpModeSettings

#: aicodebox's health path (MCP mode's and API mode's), public.
HEALTH_PATH = "/healthz"


def healthz(adapter: Adapter) -> Callable[[], dict[str, Any]]:
    """``GET /healthz``'s answer, ``{"ok": true, "adapter": <name>}`` (aicodebox's): it never
    touches the agent."""
    return lambda: {"ok": True, "adapter": adapter.name}


def mcp_routes(endpoint: McpEndpoint, paths: tuple[str, ...]) -> list[Route]:
    """Explicit routes (every method) so each spelling is served as is, never redirected."""
    return [Route(path, endpoint.app) for path in paths]


def build_app(
    settings: McpModeSettings, adapter: Adapter | None = None, locks: WorkspaceLocks | None = None
) -> Starlette:
    adapter = adapter or load_adapter(settings)
    locks = locks or WorkspaceLocks(settings.state_dir / "locks", settings.max_concurrent_runs)
    endpoint = build_mcp_asgi(settings, locks, adapter)

    app = Starlette(routes=mcp_routes(endpoint, ("/", "/mcp", "/mcp/")))
    app.state.mcp = endpoint
    return service.as_service(
        app,
        "agentbox-mcp-mode",
        settings.observability,
        health=healthz(adapter),
        health_path=HEALTH_PATH,
        parts=[endpoint.session_manager.run, endpoint.tasks.running],
        guard=lambda inner: McpTokenGuard(inner, settings.token),
        collectors=[RUN_STATS.collect],
    )
