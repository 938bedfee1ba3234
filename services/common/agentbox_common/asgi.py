"""Small ASGI pieces shared by the services' middlewares (gateway origin/API key, MCP mode tokens,
the MCP door's routers): reading a bearer token, refusing a request before the app sees it, and
handing on a request whose body was already read."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.types import Message, Receive, Scope, Send

#: The challenge header of a 401 answered for a missing or wrong bearer token.
BEARER_CHALLENGE = ((b"www-authenticate", b"Bearer"),)


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None (no header, another scheme)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def _json_response(
    status: int, body: Any, headers: Iterable[tuple[bytes, bytes]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    payload = json.dumps(body).encode()
    start = {
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *headers],
    }
    return start, {"body": payload}


async def send_json(send: Send, status: int, body: Any, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """A complete HTTP response: ``body`` as JSON with ``status`` and any extra ``headers``."""
    start, content = _json_response(status, body, headers)
    await send({"type": "http.response.start", **start})
    await send({"type": "http.response.body", **content})


async def refuse(scope: Scope, send: Send, status: int, body: Any, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Refuse a request before the app runs: ``status`` with ``body`` as JSON. A WebSocket
    handshake gets the same HTTP answer where the server offers the ASGI ``websocket.http.response``
    extension (uvicorn does), else it is closed with 1008 (policy violation) before it is accepted."""
    if scope["type"] != "websocket":
        await send_json(send, status, body, headers)
    elif "websocket.http.response" in scope.get("extensions", {}):
        start, content = _json_response(status, body, headers)
        await send({"type": "websocket.http.response.start", **start})
        await send({"type": "websocket.http.response.body", **content})
    else:
        await send({"type": "websocket.close", "code": 1008})


def replay_body(body: bytes, receive: Receive) -> Receive:
    """``receive`` for an app that reads a body a wrapper has already read."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
