"""The API token (``AICODEBOX_API_MODE_TOKEN``) as ASGI middleware in front of every API route.

A request needs ``Authorization: Bearer <token>``: none or another scheme → 401
``{"detail":"missing bearer token"}``, a wrong token → 401 ``{"detail":"invalid bearer token"}``
(constant-time compare). ``/healthz`` is public, and the mounted MCP endpoint is exempt because it
has its own token (:class:`~agentbox_mcp_mode.mcp_server.McpTokenGuard`): neither token opens the
other's routes. An empty token leaves the API open.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import BEARER_CHALLENGE, bearer_token, refuse


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
                await refuse(scope, send, 401, {"detail": problem}, BEARER_CHALLENGE)
                return
        await self.app(scope, receive, send)
