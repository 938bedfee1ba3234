"""REST door of the context plane: ``/v1/ping``, ``/v1/sandbox`` (the SDK's ``get_context``), the
package listings and ``/v1/capabilities`` (which planes are up right now)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request

from ... import __version__
from ...planes.context import SandboxContext
from ..shared.addresses import gateway_base, request_public_base
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


def _sandbox_response(snapshot: SandboxContext) -> dict[str, Any]:
    """``GET /v1/sandbox``: the envelope (``data`` is the summary) and its top-level extras."""
    response: dict[str, Any] = {
        **ok(snapshot.summary()),
        "home_dir": snapshot.home_dir,
        "version": snapshot.version,
        "detail": {"system": snapshot.system(), "runtime": snapshot.runtimes, "utils": snapshot.utils},
    }
    if snapshot.workspace:
        response["workspace"] = snapshot.workspace
    return response


def router(planes: Planes) -> APIRouter:
    context = planes.context
    local_base = gateway_base(planes.settings)
    api = APIRouter(prefix="/v1", tags=["sandbox"], responses=error_responses(503))

    @api.get("/ping")
    async def ping() -> dict[str, Any]:
        """Liveness (public even with ``AIO_API_KEY`` set)."""
        return ok({"status": "ok", "version": __version__}, message="pong")

    @api.get("/sandbox")
    async def sandbox_context(request: Request) -> dict[str, Any]:
        """The envelope (``data`` = summary text) plus top-level ``home_dir``, ``version``, ``detail``
        {system (with ``previews``: per app's port ``preview_url``, its own origin for a browser, and
        ``url``/``absproxy_url``, the path forms for programs), runtime, utils} and
        ``workspace`` when there is one."""
        return _sandbox_response(await context.get_context(request_public_base(request, local_base)))

    async def packages(language: str) -> dict[str, Any]:
        [listing] = await context.get_packages(language)
        return ok(listing.packages)

    @api.get("/sandbox/packages/python")
    async def python_packages() -> dict[str, Any]:
        """``[{name, version}]`` of the sandbox's ``python3``."""
        return await packages("python")

    @api.get("/sandbox/packages/nodejs")
    async def nodejs_packages() -> dict[str, Any]:
        """``[{name, version}]`` of the global npm packages."""
        return await packages("nodejs")

    @api.get("/capabilities")
    async def capabilities(
        refresh: bool = Query(False, description="probe now instead of the 5 s cache"),
    ) -> dict[str, Any]:
        """Which planes are up: files, exec (bash), code_interpreter (python3/node), browser (CDP)."""
        return ok(await context.capabilities(refresh=refresh))

    return api
