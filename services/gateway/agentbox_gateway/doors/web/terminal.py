"""``GET /v1/shell/ws`` (AIO's path): a WebSocket attached to an interactive terminal of the shell
plane; the same terminal at ``/terminal/ws``, under the standalone terminal page ``/terminal/`` (its
assets under ``/terminal/static/``), so that a ``/terminal/`` ticket (``GET /v1/shell/terminal-url``)
and the session it signs in open the terminal and nothing else. Binary frames are terminal bytes
both ways (text frames from the client are typed too, as UTF-8), except a JSON text frame
``{"type": "resize", "cols": N, "rows": M}``; a bad control message is answered with a JSON
``{"type": "error", "message": …}`` text frame and changes nothing. The terminal is closed (its
processes killed) when the socket closes, and the socket when the shell ends."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentbox_common.errors import PlaneError

from ...planes.shell import ShellPlane, Terminal
from .pages import STATIC_DIR

#: The standalone terminal page's prefix: the page, its assets and its socket, all under one scope.
TERMINAL_PREFIX = "/terminal/"

#: Close code when the terminal cannot be opened, whatever the plane error's kind (RFC 6455 "try
#: again later": a full house, or no bash yet); the reason is the error's message.
_CLOSE_UNAVAILABLE = 1013


def _control(text: str) -> dict[str, Any] | None:
    """A control message, or None when the text frame is input to type."""
    if not text.startswith("{"):
        return None
    try:
        message = json.loads(text)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "type" in message else None


async def _from_client(websocket: WebSocket, terminal: Terminal) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("bytes") is not None:
            await terminal.write(message["bytes"])
            continue
        text = message.get("text") or ""
        control = _control(text)
        if control is None:
            await terminal.write(text.encode())
        elif control["type"] == "resize":
            try:
                terminal.resize(control.get("cols"), control.get("rows"))
            except PlaneError as exc:
                await websocket.send_text(json.dumps({"type": "error", "message": exc.message}))
        else:
            await websocket.send_text(
                json.dumps({"type": "error", "message": f"unknown message type {control['type']!r}"})
            )


async def _to_client(websocket: WebSocket, terminal: Terminal) -> None:
    while data := await terminal.read():
        await websocket.send_bytes(data)


def routes(shell: ShellPlane) -> list[BaseRoute]:
    async def terminal_socket(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            terminal = await shell.terminals.open()
        except PlaneError as exc:
            await websocket.close(_CLOSE_UNAVAILABLE, exc.message[:120])
            return
        try:
            async with anyio.create_task_group() as tasks:

                async def relay(pump: Callable[[WebSocket, Terminal], Awaitable[None]]) -> None:
                    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                        await pump(websocket, terminal)
                    tasks.cancel_scope.cancel()

                tasks.start_soon(relay, _from_client)
                tasks.start_soon(relay, _to_client)
        finally:
            with anyio.CancelScope(shield=True):
                await shell.terminals.close(terminal)
                with contextlib.suppress(RuntimeError, WebSocketDisconnect):
                    await websocket.close()

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "terminal.html", headers={"cache-control": "no-store"})

    return [
        WebSocketRoute("/v1/shell/ws", terminal_socket),
        Route(TERMINAL_PREFIX, page, methods=["GET"]),
        WebSocketRoute(f"{TERMINAL_PREFIX}ws", terminal_socket),
        Mount(f"{TERMINAL_PREFIX}static", app=StaticFiles(directory=str(STATIC_DIR)), name="terminal-static"),
    ]
