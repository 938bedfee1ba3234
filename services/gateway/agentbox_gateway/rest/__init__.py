"""The REST door (``/v1/*``, AIO Sandbox compatible): one FastAPI router per plane, all calling the
same plane code as the MCP tools."""

from __future__ import annotations

from fastapi import FastAPI

from ..planes import Planes
from ..settings import GatewaySettings
from . import browser, code, files, sandbox, shell
from .envelope import install_error_handlers


def build_rest_app(planes: Planes, settings: GatewaySettings) -> FastAPI:
    app = FastAPI(
        title="agentbox sandbox API",
        openapi_url="/v1/openapi.json",
        docs_url=None,  # served offline by the web module
        redoc_url=None,
    )
    install_error_handlers(app)
    for module in (shell, code, files, sandbox, browser):
        app.include_router(module.router(planes, settings))
    return app
