"""``AIO_API_SURFACE=v2``: only ``/v2`` and ``/mcp`` are the API, so every ``/v1`` path answers 404
in the REST envelope, whichever door would serve it (the REST routes, ``/v1/shell/ws``,
``/v1/docs``); the rest of the gateway (``/health``, ``/mcp``, the pages, ``/cdp``) is untouched."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import refuse

V1 = "/v1"


def is_v1(path: str) -> bool:
    return path == V1 or path.startswith(f"{V1}/")


class ApiSurface:
    """ASGI middleware: 404 for ``/v1`` paths when only ``/v2`` is served (``v2_only``)."""

    def __init__(self, app: ASGIApp, v2_only: bool) -> None:
        self.app = app
        self.v2_only = v2_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.v2_only and scope["type"] in ("http", "websocket") and is_v1(scope["path"]):
            body = {
                "success": False,
                "message": f"Not Found: {scope['path']} (this gateway serves /v2 only)",
                "data": None,
                "hint": "AIO_API_SURFACE=v2 is set: use the /v2 routes (/v2/openapi.json lists them)",
            }
            await refuse(scope, send, 404, body)
            return
        await self.app(scope, receive, send)
