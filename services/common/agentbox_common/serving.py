"""Run an ASGI app with uvicorn the same way in every service."""

from __future__ import annotations

import uvicorn
from starlette.types import ASGIApp

from .processes import hide_own_environment


def serve(app: ASGIApp, host: str, port: int) -> None:
    hide_own_environment()
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_graceful_shutdown=5,
        ws="websockets-sansio",
    )
    uvicorn.Server(config).run()
