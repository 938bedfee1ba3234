"""The API token (``AICODEBOX_API_MODE_TOKEN``) as ASGI middleware in front of every API route.

A request needs ``Authorization: Bearer <token>``: none or another scheme → 401
``{"detail":"missing bearer token"}``, a wrong token → 401 ``{"detail":"invalid bearer token"}``
(constant-time compare). ``/healthz`` is public, and the mounted MCP endpoint is exempt because it
has its own token (:class:`~agentbox_mcp_mode.mcp_server.McpTokenGuard`): neither token opens the
other's routes. An empty token leaves the API open.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer …`` header, or None (no header, another scheme)."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class ApiTokenGuard:
    def __init__(self, app: ASGIApp, token: str, exempt_paths: Iterable[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.exempt = frozenset(exempt_paths)

    def problem(self, scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        if not self.token or scope["path"] in self.exempt:
            return None
        presented = bearer_token(scope)
        if presented is None:
            return "missing bearer token"
        if not hmac.compare_digest(presented.encode(), self.token):
            return "invalid bearer token"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            problem = self.problem(scope)
            if problem is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                body = json.dumps({"detail": problem}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
