"""The REST door (``/v1/*``, AIO Sandbox compatible): one FastAPI router per plane, all calling the
same plane code as the MCP tools. FastAPI and the routers are imported when the door is built (on
its first request, ``app.LazyApp``), so a gateway that only serves MCP never loads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

    from ..planes import Planes
    from ..settings import GatewaySettings


def build_rest_app(planes: Planes, settings: GatewaySettings) -> FastAPI:
    from fastapi import FastAPI

    from . import browser, browser_page, code, context, file_watch, files, hooks, proxy, shell, skills, util
    from .bodies import BodyLimit
    from .envelope import error_responses, install_error_handlers

    app = FastAPI(
        title="agentbox sandbox API",
        openapi_url="/v1/openapi.json",
        docs_url=None,  # served offline by the web module
        redoc_url=None,
        responses=error_responses(401, 403, 421),  # the guards in front of every route
    )
    install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=settings.max_json_body_bytes)
    routers = (
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
        proxy.router(planes),
        browser_page.display_router(planes),
    )
    for router in routers:
        app.include_router(router)
    return app
