"""The API-mode server (``agentbox-api``, port 8080): ``/run``, ``/files``, the OpenAI-compatible
endpoint and ``/status`` behind ``AICODEBOX_API_MODE_TOKEN``; a public ``GET /healthz``; and, with
``AICODEBOX_MCP_MODE=1``, the MCP endpoint at ``/mcp/`` and ``/mcp`` (no redirect) behind its own
``AICODEBOX_MCP_MODE_TOKEN``.

One :class:`~agentbox_mcp_mode.run_service.RunService` (one adapter, one
:class:`~agentbox_mcp_mode.locks.WorkspaceLocks`) serves every surface of the process, so ``/run``,
the OpenAI endpoint and MCP ``run_prompt`` keep each other out of a busy workspace. Shutting down
cancels the runs still going, so no agent outlives the server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import FastAPI

from agentbox_common.service import as_service
from agentbox_common.workspace_files import WorkspaceFiles

from ..adapters import Adapter, load_adapter
from ..app import HEALTH_PATH, healthz, mcp_routes
from ..locks import WorkspaceLocks
from ..mcp_server import build_mcp_asgi
from ..run_service import RunService
from ..run_stats import RUN_STATS
from . import routes_files, routes_openai, routes_run
from .auth import ApiTokenGuard
from .errors import install_error_handler
from .runs import RunRegistry
from .settings import ApiModeSettings

MCP_PATHS = ("/mcp", "/mcp/")
PUBLIC_PATHS = (HEALTH_PATH,)


def build_api_app(
    settings: ApiModeSettings, adapter: Adapter | None = None, locks: WorkspaceLocks | None = None
) -> FastAPI:
    service = RunService(settings.mcp, adapter or load_adapter(settings.mcp), locks)
    adapter, locks = service.adapter, service.locks
    registry = RunRegistry(locks, settings.result_ttl)
    endpoint = build_mcp_asgi(settings.mcp, locks, adapter) if settings.mcp.mcp_mode else None

    parts: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
    if endpoint is not None:
        parts.extend((endpoint.session_manager.run, endpoint.tasks.running))
    parts.append(lambda: contextlib.aclosing(registry))  # closed first: the runs still going are cancelled
    app = FastAPI(title="aicodebox API mode")
    install_error_handler(app)
    app.include_router(routes_run.router(service, registry))
    app.include_router(routes_files.router(WorkspaceFiles(settings.mcp.workspace), settings.mcp.max_upload_bytes))
    app.include_router(routes_openai.router(service))
    exempt: tuple[str, ...] = PUBLIC_PATHS
    if endpoint is not None:
        app.router.routes.extend(mcp_routes(endpoint, MCP_PATHS))
        exempt += MCP_PATHS
    app.add_middleware(ApiTokenGuard, token=settings.token, exempt_paths=exempt)
    app.state.locks, app.state.registry, app.state.mcp = locks, registry, endpoint
    return as_service(
        app,
        "agentbox-api",
        settings.mcp.observability,
        health=healthz(adapter),
        health_path=HEALTH_PATH,
        parts=parts,
        collectors=[RUN_STATS.collect],
    )
