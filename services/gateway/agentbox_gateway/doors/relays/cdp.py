"""Chromium's DevTools endpoint, published through the gateway at ``/cdp/`` so that CDP clients
outside the container (``playwright.chromium.connect_over_cdp("http://host:8091/cdp")``,
Puppeteer's ``browserURL``) reach the loopback-only Chromium behind the gateway's API key.

``/cdp/json/*`` is forwarded with the WebSocket addresses in its answers rewritten to the gateway's
public address (``X-Forwarded-Proto``/``-Host``/``-Prefix`` honoured, else ``Host``);
``/cdp/devtools/*`` WebSockets are relayed to Chromium message by message. The discovery answers
(``/json/version``, ``/json``, ``/json/list``, ``/json/protocol``) are served at the root too:
Puppeteer resolves ``/json/version`` against ``browserURL``'s origin (``browserURL:
"http://host:8091/cdp"`` asks ``http://host:8091/json/version``, without the URL's path or query),
and Playwright given the bare ``http://host:8091`` asks ``/json/version/`` there."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.types import Scope
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState
from websockets.exceptions import ConnectionClosed

from agentbox_common.http import plain_http_only

from ...auth.guards import url_ticket
from ...auth.tickets import TICKET_PARAM
from ...planes.browser.errors import BrowserUnavailable
from ...planes.browser.launch import BrowserLauncher
from ...settings import GatewaySettings
from ..shared.addresses import gateway_base, request_public_base

logger = logging.getLogger(__name__)

#: Where the relayed DevTools WebSockets live; a ticket in a socket URL is good only under it.
SOCKET_PREFIX = "/cdp/devtools/"
#: Chromium's discovery answers, also served at the gateway's root (see the module's docstring).
DISCOVERY_PATHS = ("/json", "/json/version", "/json/list", "/json/protocol")

_FRONTEND_WS = re.compile(r"([?&])wss?=[^&/]+(/devtools/)")


def _without_credentials(query: str) -> str:
    return urlencode(
        [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in ("api_key", TICKET_PARAM)]
    )


def with_ticket(url: str, scope: Scope) -> str:
    """A socket URL handed to the caller of ``scope``: with a single-use ``?ticket=`` when the
    caller authenticated in its own URL (so a client that can only use URLs still connects),
    unchanged otherwise. The key itself never goes into a URL."""
    query = url_ticket(scope, SOCKET_PREFIX)
    return f"{url}?{query}" if query else url


def _unchanged(url: str) -> str:
    return url


def rewrite_targets(payload: Any, base: str, sign: Callable[[str], str] = _unchanged) -> Any:
    """Point ``webSocketDebuggerUrl`` and the DevTools frontend's ``ws=`` at ``<base>/cdp/devtools/``;
    ``sign`` finishes each socket URL (:func:`with_ticket`)."""
    if isinstance(payload, list):
        return [rewrite_targets(item, base, sign) for item in payload]
    if not isinstance(payload, dict):
        return payload
    secure = base.startswith("https:")
    ws_base = ("wss" if secure else "ws") + base[base.index(":") :]
    authority_and_prefix = base.split("://", 1)[1]
    rewritten = dict(payload)
    socket_url = payload.get("webSocketDebuggerUrl")
    if isinstance(socket_url, str):
        rewritten["webSocketDebuggerUrl"] = sign(f"{ws_base}/cdp{urlsplit(socket_url).path}")
    frontend = payload.get("devtoolsFrontendUrl")
    if isinstance(frontend, str):
        param = "wss" if secure else "ws"
        rewritten["devtoolsFrontendUrl"] = _FRONTEND_WS.sub(
            lambda m: f"{m[1]}{param}={authority_and_prefix}/cdp{m[2]}", frontend
        )
    return rewritten


class CdpProxy:
    """``launcher``: a relay needs Chromium, so it is started first (or waited for while it starts)."""

    def __init__(self, settings: GatewaySettings, launcher: BrowserLauncher) -> None:
        self.launcher = launcher
        self.cdp_url = settings.cdp_url.rstrip("/")
        self.ws_root = "ws" + self.cdp_url[4:] if self.cdp_url.startswith("http") else self.cdp_url
        self.fallback_base = gateway_base(settings)

    async def json_endpoint(self, request: Request) -> Response:
        """``GET|PUT /cdp/json[/...]`` -> Chromium's ``/json[/...]`` with addresses rewritten."""
        path = request.path_params.get("path")
        return await self.forward(request, "/json" + (f"/{path}" if path is not None else ""))

    async def discovery(self, request: Request) -> Response:
        """``GET /json[/version|/list|/protocol][/]`` at the root, as ``/cdp/json…`` answers it; any
        other ``/json…`` path is not Chromium's to answer here (404)."""
        path = "/json" + request.path_params["tail"].rstrip("/")
        if path not in DISCOVERY_PATHS:
            return JSONResponse({"success": False, "message": "Not Found", "data": None, "hint": None}, 404)
        return await self.forward(request, path)

    async def forward(self, request: Request, path: str) -> Response:
        """Chromium's answer at ``path`` (under ``/json``), its socket addresses on the gateway's."""
        url = f"{self.cdp_url}{path}"
        query = _without_credentials(request.url.query)
        try:
            await self.launcher.ensure()
            async with httpx.AsyncClient(timeout=10.0, trust_env=False, verify=plain_http_only()) as client:
                upstream = await client.request(request.method, url + (f"?{query}" if query else ""))
        except (httpx.HTTPError, BrowserUnavailable) as exc:
            cause = (
                str(exc)
                if isinstance(exc, BrowserUnavailable)
                else f"{url} did not answer ({type(exc).__name__}: {exc})"
            )
            return JSONResponse(
                {
                    "success": False,
                    "message": "Browser unavailable: no reachable CDP port",
                    "data": None,
                    "hint": cause,
                },
                status_code=503,
            )
        if "json" not in upstream.headers.get("content-type", ""):
            return Response(upstream.content, upstream.status_code, media_type=upstream.headers.get("content-type"))
        try:
            payload = upstream.json()
        except ValueError:
            return Response(upstream.content, upstream.status_code, media_type="application/json")
        base = request_public_base(request, self.fallback_base)
        body = rewrite_targets(payload, base, lambda url: with_ticket(url, request.scope))
        return JSONResponse(body, status_code=upstream.status_code)

    async def devtools_socket(self, websocket: WebSocket) -> None:
        """``WS /cdp/devtools/...`` relayed to Chromium's ``/devtools/...`` in both directions."""
        from websockets.asyncio.client import connect  # imported where used: the first relay loads it

        query = _without_credentials(websocket.url.query)
        url = f"{self.ws_root}/devtools/{websocket.path_params['path']}" + (f"?{query}" if query else "")
        try:
            await self.launcher.ensure()
            upstream = await connect(
                url, max_size=None, compression=None, ping_interval=None, open_timeout=5, proxy=None
            )
        except Exception as exc:  # refused, timed out or handshake rejected: Chromium is not there
            logger.warning("CDP proxy cannot reach %s: %s: %s", url, type(exc).__name__, exc)
            await websocket.accept()
            await websocket.close(code=1011, reason="no reachable CDP port")
            return
        await websocket.accept()
        async with upstream, anyio.create_task_group() as group:

            async def relay(pump: Callable[[], Awaitable[None]]) -> None:
                with contextlib.suppress(ConnectionClosed, WebSocketDisconnect, RuntimeError, OSError):
                    await pump()
                group.cancel_scope.cancel()

            async def to_chromium() -> None:
                while True:
                    message = await websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    data = message.get("text")
                    await upstream.send(data if data is not None else message.get("bytes", b""))

            async def to_client() -> None:
                async for message in upstream:
                    if isinstance(message, str):
                        await websocket.send_text(message)
                    else:
                        await websocket.send_bytes(message)

            group.start_soon(relay, to_chromium)
            group.start_soon(relay, to_client)
        # Chromium ended the session: close our side. When the client left first (the normal end
        # of a Playwright or Puppeteer session) there is nothing to close.
        if (
            websocket.client_state == WebSocketState.CONNECTED
            and websocket.application_state == WebSocketState.CONNECTED
        ):
            with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
                await websocket.close(code=1000)


def routes(settings: GatewaySettings, launcher: BrowserLauncher) -> list[BaseRoute]:
    """The ``/cdp/*`` routes and the root discovery ones; mount them before the REST catch-all."""
    proxy = CdpProxy(settings, launcher)
    return [
        Route("/cdp/json", proxy.json_endpoint, methods=["GET", "PUT"]),
        Route("/cdp/json/{path:path}", proxy.json_endpoint, methods=["GET", "PUT"]),
        WebSocketRoute(SOCKET_PREFIX + "{path:path}", proxy.devtools_socket),
        Route("/json{tail:path}", proxy.discovery, methods=["GET"]),  # one route: each costs every request
    ]
