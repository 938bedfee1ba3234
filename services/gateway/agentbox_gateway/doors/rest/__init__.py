"""The REST door (``/v1/*``, AIO Sandbox compatible, and aiod's ``/v2/*`` from ``doors/v2``): one
FastAPI router per plane, all calling the same plane code as the MCP tools. FastAPI and the routers
are imported when the door is built (on its first request, ``app.LazyApp``), so a gateway that only
serves MCP never loads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

if TYPE_CHECKING:
    from fastapi import APIRouter, FastAPI

    from ...planes import Planes
    from ...settings import GatewaySettings


class Surfaces:
    """The door as two FastAPI apps, ``/v2/*`` and the rest, each request matched against its own
    surface's routes only: FastAPI tries an app's routes one after another, and ``/v2``'s came after
    some 140 of ``/v1``'s (half a millisecond on every ``/v2`` call)."""

    def __init__(self, v1: FastAPI, v2: FastAPI) -> None:
        self.v1 = v1
        self.v2 = v2

    @property
    def routes(self) -> list[BaseRoute]:
        return [*self.v1.routes, *self.v2.routes]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        app = self.v2 if path == "/v2" or path.startswith("/v2/") else self.v1
        await app(scope, receive, send)


def build_rest_app(planes: Planes, settings: GatewaySettings, extra: Sequence[APIRouter] = ()) -> Surfaces:
    """The door: the ``/v1`` routers (and ``extra``) unless ``AIO_API_SURFACE=v2``, and the ``/v2`` ones;
    with ``v2`` alone, the other surface is an app without routes (its 404s are the envelope's)."""
    from .. import v2
    from . import browser, browser_page, code, context, egress, file_watch, files, hooks, shell, skills, util

    serves_v1 = settings.api_surface != "v2"
    v1_routers = [
        shell.router(planes),
        code.router(planes),
        files.router(planes, settings),
        context.router(planes),
        browser.router(planes),
        browser_page.router(planes),
        skills.router(planes, settings),
        util.router(planes),
        file_watch.router(planes),
        hooks.router(planes),
        egress.router(planes),
        browser_page.display_router(planes),
        *extra,
    ]
    return Surfaces(
        _surface_app(
            settings,
            v1_routers if serves_v1 else [],
            "agentbox sandbox API",
            "/v1/openapi.json" if serves_v1 else None,
        ),
        _surface_app(settings, v2.routers(planes, settings), "agentbox sandbox API /v2", "/v2/openapi.json"),
    )


def _surface_app(
    settings: GatewaySettings, routers: Sequence[APIRouter], title: str, openapi_url: str | None
) -> FastAPI:
    """One surface's app; its OpenAPI document (public, as in aiod) describes its routes only."""
    from fastapi import FastAPI

    from .bodies import BodyLimit
    from .envelope import error_responses, install_error_handlers

    app = FastAPI(
        title=title,
        openapi_url=openapi_url,
        docs_url=None,  # served offline by the pages (doors/web/pages.py)
        redoc_url=None,
        responses=error_responses(401, 403, 421),  # the guards in front of every route
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_json_body_bytes)
    for router in routers:
        app.include_router(router)
    return app
