"""ASGI middleware guarding every route: the Origin check (so a web page cannot drive a local
sandbox) and the ``AIO_API_KEY`` bearer check. Both wrap the whole app, MCP, REST and CDP alike."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import refuse

#: Routes anyone may call, even with a key set (AIO's public set).
PUBLIC_PATHS = frozenset({"/health", "/v1/ping", "/v1/openapi.json", "/v1/docs"})


def _is_loopback_host(hostname: str | None) -> bool:
    if not hostname:
        return False
    if hostname == "localhost" or hostname.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def origin_matches(origin: str, pattern: str) -> bool:
    """Exact match, or ``scheme://host:*`` matching that host on any port."""
    if origin == pattern:
        return True
    if pattern.endswith(":*"):
        return origin.startswith(pattern[:-1]) and origin[len(pattern) - 1 :].isdigit()
    return False


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    parts = urlsplit(origin)
    if parts.scheme in ("http", "https") and _is_loopback_host(parts.hostname):
        return True
    return any(origin_matches(origin, pattern) for pattern in allowed)


class OriginGuard:
    """Refuse (403) a request whose ``Origin`` is neither loopback nor allowlisted."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str]) -> None:
        self.app = app
        self.allowed = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = dict(scope["headers"]).get(b"origin")
            if origin is not None and not origin_allowed(origin.decode("latin-1"), self.allowed):
                await refuse(
                    scope,
                    send,
                    403,
                    {"success": False, "message": "Forbidden: origin not allowed", "data": None, "hint": None},
                )
                return
        await self.app(scope, receive, send)


def presented_key(scope: Scope) -> str | None:
    """The key a request carries: Bearer header, ``x-api-key``/``x-aio-api-key``, or ``?api_key=``."""
    headers = dict(scope["headers"])
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    for name in (b"x-api-key", b"x-aio-api-key"):
        if name in headers:
            return headers[name].decode("latin-1")
    query = scope.get("query_string", b"").decode("latin-1")
    for key, value in parse_qsl(query):
        if key == "api_key":
            return value
    return None


class ApiKeyGuard:
    """With a key configured, every non-public route answers 401 unless the key is presented."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self.api_key = api_key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and self.api_key and scope["path"] not in PUBLIC_PATHS:
            key = presented_key(scope)
            if key is None or not hmac.compare_digest(key.encode(), self.api_key):
                await refuse(
                    scope,
                    send,
                    401,
                    {"success": False, "message": "Unauthorized: missing or invalid API key", "data": None,
                     "hint": "send Authorization: Bearer <AIO_API_KEY>"},
                    [(b"www-authenticate", b'Bearer realm="agentbox"')],
                )
                return
        await self.app(scope, receive, send)
