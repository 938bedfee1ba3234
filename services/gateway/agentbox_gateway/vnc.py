"""The live view: the noVNC client (Debian's ``novnc`` files) at ``/vnc/`` (``/vnc/index.html``
is its full client, as in AIO) and ``/vnc/websockify``, a WebSocket relayed byte for byte to the VNC
server on the display, which listens on loopback only. Behind the same guard as every route (a
person's browser uses the session cookie, or a ticket from ``vnc_url``); absent when the gateway has
no display or ``DISABLE_VNC`` is true."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Scope
from starlette.websockets import WebSocket, WebSocketDisconnect

from .security import page_ticket
from .settings import GatewaySettings

logger = logging.getLogger(__name__)

#: Where a ``vnc_url`` ticket is good: the page, its assets and the bridge.
VNC_PREFIX = "/vnc/"
#: Bytes read from the VNC server per WebSocket message.
_CHUNK = 64 * 1024
#: RFC 6455 close code when the VNC server cannot be reached (the display stack is restarting).
_CLOSE_UNAVAILABLE = 1011


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def signed_vnc_url(url: str | None, scope: Scope) -> str | None:
    """``vnc_url`` with a single-use ticket for a key holder: the person it is handed to opens it
    in a browser without a session, and its first use signs that browser in."""
    ticket = page_ticket(scope, VNC_PREFIX) if url else None
    return f"{url}&{ticket}" if url and ticket else url


def routes(settings: GatewaySettings) -> list[BaseRoute]:
    if not settings.vnc_enabled:
        return []
    host, port = _split_address(settings.vnc_address)
    client = settings.novnc_dir / "vnc.html"

    async def index(request: Request) -> Response:
        return FileResponse(client, headers={"cache-control": "no-store"})

    async def bridge(websocket: WebSocket) -> None:
        offered = websocket.scope.get("subprotocols", [])
        await websocket.accept(subprotocol="binary" if "binary" in offered else None)
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            logger.warning("live view: VNC server %s:%s unreachable: %s", host, port, exc)
            await websocket.close(_CLOSE_UNAVAILABLE, "VNC server unreachable")
            return

        async def to_vnc() -> None:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                writer.write(message.get("bytes") or (message.get("text") or "").encode("latin-1"))
                await writer.drain()

        async def to_browser() -> None:
            while data := await reader.read(_CHUNK):
                await websocket.send_bytes(data)

        try:
            async with anyio.create_task_group() as tasks:

                async def relay(pump: Callable[[], Awaitable[None]]) -> None:
                    with contextlib.suppress(WebSocketDisconnect, OSError, RuntimeError):
                        await pump()
                    tasks.cancel_scope.cancel()

                tasks.start_soon(relay, to_vnc)
                tasks.start_soon(relay, to_browser)
        finally:
            writer.close()
            with anyio.CancelScope(shield=True), contextlib.suppress(RuntimeError, WebSocketDisconnect):
                await websocket.close()

    return [
        Route("/vnc/index.html", index, methods=["GET"]),
        WebSocketRoute("/vnc/websockify", bridge),
        Mount("/vnc", app=StaticFiles(directory=str(settings.novnc_dir), check_dir=False), name="novnc"),
    ]
