"""REST door of the context plane: ``/v1/ping``, ``/v1/sandbox`` (the SDK's ``get_context``), the
package listings and ``/v1/capabilities`` (which planes are up right now)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request

from .. import __version__
from ..cdp_proxy import request_public_base
from ..planes.context import ContextError
from .envelope import RestError, error_responses, ok

if TYPE_CHECKING:
    from ..planes import Planes


def router(planes: Planes) -> APIRouter:
    context, browser = planes.context, planes.browser
    api = APIRouter(prefix="/v1", tags=["sandbox"], responses=error_responses(503))

    @api.get("/ping")
    async def ping() -> dict[str, Any]:
        """Liveness (public even with ``AIO_API_KEY`` set)."""
        return ok({"status": "ok", "version": __version__}, message="pong")

    @api.get("/sandbox")
    async def sandbox_context(request: Request) -> dict[str, Any]:
        """The envelope (``data`` = summary text) plus top-level ``home_dir``, ``version``, ``detail``
        {system (with ``previews``: the listening ports' preview URLs), runtime, utils} and
        ``workspace`` when there is one."""
        snapshot = await context.get_context(request_public_base(request, context.local_base))
        return {**ok(snapshot.summary()), **snapshot.to_sandbox_response()}

    async def packages(language: str) -> dict[str, Any]:
        try:
            [listing] = await context.get_packages(language)
        except ContextError as exc:
            raise RestError(503, str(exc)) from None
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
        return ok(await context.capabilities(browser.status, refresh=refresh))

    return api
