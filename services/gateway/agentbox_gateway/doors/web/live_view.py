"""The live view: the noVNC client (Debian's ``novnc`` files) under ``/vnc/`` (``/vnc/`` sends the
browser on to ``/vnc/index.html``, its full client as in AIO, set to connect on load, with the
gateway's ``live-view.js``/``.css`` added: the control bar closed and a light placeholder until the
picture comes) and
``/vnc/websockify``, a WebSocket relayed byte for byte to the VNC server on the display, which
listens on loopback only. Behind the same guard as every route (a person's browser uses the session
cookie, or a ticket from ``vnc_url``); absent when the gateway has no display or ``DISABLE_VNC`` is
true."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Scope
from starlette.websockets import WebSocket, WebSocketDisconnect

from ...auth.guards import page_ticket
from ...auth.tickets import TICKET_PARAM
from ...planes.browser.errors import BrowserUnavailable
from ...planes.browser.launch import BrowserLauncher
from ...settings import GatewaySettings
from ..shared.addresses import public_address

logger = logging.getLogger(__name__)

#: Where a ``vnc_url`` ticket is good: the page, its assets and the bridge.
VNC_PREFIX = "/vnc/"
#: Where the live view's WebSocket bridge is, under the gateway's public address.
VNC_SOCKET_PATH = "vnc/websockify"
#: Bytes read from the VNC server per WebSocket message.
_CHUNK = 64 * 1024
#: RFC 6455 close code when the VNC server cannot be reached (the display stack is restarting).
_CLOSE_UNAVAILABLE = 1011
#: The gateway's own files added to noVNC's page (beside the dashboard's).
_STATIC_DIR = Path(__file__).with_name("static")
#: Added to noVNC's page, after its own module and style sheet.
_ADDITIONS = '<link rel="stylesheet" href="live-view.css">\n<script type="module" src="live-view.js"></script>\n'


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def live_view_path(prefix: str, extra: list[tuple[str, str]] | None = None) -> str:
    """``<prefix>/vnc/index.html?…``: the noVNC page connecting on load, scaled to the window, to
    the bridge under the same reverse-proxy ``prefix`` (noVNC takes ``path`` from the host's root);
    ``extra`` query parameters (a person's own noVNC options) come after and win."""
    prefix = prefix.strip("/")
    path = f"{prefix}/{VNC_SOCKET_PATH}" if prefix else VNC_SOCKET_PATH
    query = dict([("autoconnect", "true"), ("resize", "scale"), ("path", path), *(extra or [])])
    return f"{'/' + prefix if prefix else ''}/vnc/index.html?{urlencode(query)}"


def live_view_url(public_base: str) -> str:
    """The noVNC page (:func:`live_view_path`) on ``public_base``, prefix and all."""
    parts = urlsplit(public_base)
    return f"{parts.scheme}://{parts.netloc}{live_view_path(parts.path)}"


def signed_vnc_url(url: str | None, scope: Scope) -> str | None:
    """``vnc_url`` with a single-use ticket for a key holder: the person it is handed to opens it
    in a browser without a session, and its first use signs that browser in."""
    ticket = page_ticket(scope, VNC_PREFIX) if url else None
    return f"{url}&{ticket}" if url and ticket else url


def routes(settings: GatewaySettings, launcher: BrowserLauncher) -> list[BaseRoute]:
    """``launcher``: the display starts with the browser, so a viewer starts both (``manual``)."""
    if not settings.vnc_enabled:
        return []
    host, port = _split_address(settings.vnc_address)
    client = settings.novnc_dir / "vnc.html"

    async def index(request: Request) -> Response:
        try:
            page = await anyio.Path(client).read_text()
        except OSError:
            return Response("noVNC is not installed", 404)
        page = page.replace("</head>", f"{_ADDITIONS}</head>", 1)
        return Response(page, media_type="text/html", headers={"cache-control": "no-store"})

    def addition(name: str) -> Route:
        async def serve(request: Request) -> Response:
            return FileResponse(_STATIC_DIR / name)

        return Route(f"/vnc/{name}", serve, methods=["GET"])

    async def package(request: Request) -> Response:
        """noVNC's page asks for its ``package.json`` (for the version it shows); Debian's files have
        none (the image writes one): then an empty version, rather than a 404 on every load."""
        found = settings.novnc_dir / "package.json"
        if await anyio.Path(found).is_file():
            return FileResponse(found)
        return JSONResponse({"name": "novnc", "version": ""})

    async def live_view(request: Request) -> Response:
        """``/vnc/``: on to the client with its query, under the caller's reverse-proxy prefix. A
        path, not a URL (no host taken from a header), and no credential in it: a ticket that led
        here was used and signed the browser in for ``/vnc/``."""
        _, _, prefix = public_address(request.headers, request.url.scheme, "")
        extra = [(k, v) for k, v in parse_qsl(request.url.query) if k not in ("api_key", TICKET_PARAM)]
        return RedirectResponse(live_view_path(prefix, extra), 303, headers={"cache-control": "no-store"})

    async def bridge(websocket: WebSocket) -> None:
        offered = websocket.scope.get("subprotocols", [])
        await websocket.accept(subprotocol="binary" if "binary" in offered else None)
        try:
            await launcher.ensure()
            reader, writer = await asyncio.open_connection(host, port)
        except (OSError, BrowserUnavailable) as exc:
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
        Route("/vnc", live_view, methods=["GET"]),
        Route("/vnc/", live_view, methods=["GET"]),
        Route("/vnc/index.html", index, methods=["GET"]),
        addition("live-view.js"),
        addition("live-view.css"),
        Route("/vnc/package.json", package, methods=["GET"]),
        WebSocketRoute("/vnc/websockify", bridge),
        Mount("/vnc", app=StaticFiles(directory=str(settings.novnc_dir), check_dir=False), name="novnc"),
    ]
