"""Previews on an origin of their own. A request whose ``Host`` (or ``X-Forwarded-Host``) is a
preview host (``{port}.localhost``, or ``AIO_PREVIEW_HOST`` such as ``{port}-preview.example.com``)
goes wholly to the app on that port: every path, ``/v1/*``, ``/tickets`` and ``/login`` included, is
the app's, and the app sees it as is (like ``/absproxy/``). A page there is on another origin than
the gateway, so it cannot read the gateway with the person's credentials; and a request to the
gateway's own host from a preview origin is refused (403), whatever its method.

There the gateway's session cookie is never valid and the app's own ``Authorization`` header and
cookies are the app's. With ``AIO_API_KEY`` set a preview needs the preview cookie of its port
(``auth/previews.py``: a preview ticket redeemed here sets it, and the browser is sent back to the
same URL without the ticket); programs send the key in ``X-AIO-API-Key`` or ``X-API-Key`` instead.
The cookie, the ticket and the key are stripped before the app."""

from __future__ import annotations

import functools
import hmac
from collections.abc import Iterable
from urllib.parse import unquote_plus, urlsplit

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.asgi import refuse
from agentbox_common.hosts import is_loopback_name

from ...auth import browser_sessions
from ...auth.guards import origin_matches
from ...auth.previews import PREVIEW_COOKIE, TICKET_PARAM, PreviewGrants, preview_cookie
from ...planes.preview import PreviewHosts

_SAFE = frozenset({"GET", "HEAD"})
_KEY_HEADERS = (b"x-aio-api-key", b"x-api-key")


def _without_ticket(query: bytes) -> tuple[bytes, str | None]:
    """The raw query without ``agentbox_preview`` (the rest byte for byte), and the ticket if any."""
    if TICKET_PARAM.encode() not in query:
        return query, None
    kept, ticket = [], None
    for piece in query.split(b"&"):
        name, _, value = piece.decode("latin-1").partition("=")
        if unquote_plus(name) == TICKET_PARAM:
            ticket = unquote_plus(value)
        else:
            kept.append(piece)
    return b"&".join(kept), ticket


_NEEDS_TICKET = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>agentbox: preview</title></head>
<body style="font: 16px system-ui, sans-serif; max-width: 36rem; margin: 4rem auto">
<h1>This preview needs permission</h1>
<p>{reason} Open it from the agentbox dashboard (its Previews list), or ask the gateway for a link with
<code>POST /tickets/preview</code>. Programs send the key in <code>X-AIO-API-Key</code>.</p>
</body></html>
"""


async def _refuse(scope: Scope, send: Send, status: int, message: str, hint: str) -> None:
    if status == 401 and browser_sessions.wants_page(scope):
        reason = "That link was already used or has expired." if "ticket" in message else "It is not open yet."
        body = _NEEDS_TICKET.format(reason=reason).encode()
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    await refuse(scope, send, status, {"success": False, "message": message, "data": None, "hint": hint})


def _local_path(raw_path: bytes) -> bytes:
    """A path on this host for ``Location`` (``//evil.example`` would leave it)."""
    return b"/" + raw_path.lstrip(b"/\\")


class PreviewHost:
    """The dispatch by host (see the module's docstring), placed right inside the ``Host`` guard:
    preview hosts to ``door`` (the preview door keeping the path), the rest to ``app``. The cost
    on the gateway's own requests is one pass over the headers and a cached look-up."""

    def __init__(
        self,
        app: ASGIApp,
        door: ASGIApp,
        hosts: PreviewHosts,
        api_key: str,
        grants: PreviewGrants,
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.door = door
        self.hosts = hosts
        self.key = api_key.encode()
        self.grants = grants
        self.allowed_origins = tuple(allowed_origins)
        self._port_of = functools.lru_cache(maxsize=256)(self._judge_host)
        self._origin_port = functools.lru_cache(maxsize=256)(self._judge_origin)

    def _judge_host(self, host: bytes) -> int | None:
        return self.hosts.port_of(host.decode("latin-1"))

    def _judge_origin(self, origin: bytes) -> int | None:
        """The port of a preview origin, -1 for another allowed one, None for a foreign one."""
        text = origin.decode("latin-1")
        try:
            parts = urlsplit(text)
            hostname = parts.hostname
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not hostname:
            return None
        port = self.hosts.port_of(hostname)
        if port is not None:
            return port
        if is_loopback_name(hostname) or any(origin_matches(text, pattern) for pattern in self.allowed_origins):
            return -1
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = forwarded = origin = None
        for name, value in scope["headers"]:
            if name == b"host":
                host = value
            elif name == b"x-forwarded-host":
                forwarded = value.split(b",")[0].strip()
            elif name == b"origin":
                origin = value
        port = self._port_of(host) if host is not None else None
        if port is None and forwarded is not None:
            port = self._port_of(forwarded)
        if port is None:
            preview_origin = self._origin_port(origin) if origin is not None else None
            if preview_origin is not None and preview_origin >= 0:
                await _refuse(
                    scope,
                    send,
                    403,
                    "Forbidden: a preview origin cannot call the gateway",
                    "a previewed app has an origin of its own; call the gateway from its own pages or a program",
                )
                return
            await self.app(scope, receive, send)
            return
        await self._preview(scope, receive, send, port, origin)

    async def _preview(self, scope: Scope, receive: Receive, send: Send, port: int, origin: bytes | None) -> None:
        if origin is not None and self._origin_port(origin) is None:
            await _refuse(
                scope, send, 403, "Forbidden: origin not allowed", "list the page's origin in AIO_ALLOWED_ORIGINS"
            )
            return
        query, ticket = _without_ticket(scope.get("query_string", b""))
        scope = {**scope, "query_string": query, "path_params": {"port": str(port)}}
        if self.key:
            if ticket is not None and scope["type"] == "http" and scope["method"] in _SAFE:
                await self._redeem(scope, send, port, ticket, query)
                return
            if not self._authorised(scope, port):
                await _refuse(
                    scope,
                    send,
                    401,
                    f"Unauthorized: this preview of port {port} needs a preview ticket or the key",
                    "open it from the dashboard, or send X-AIO-API-Key: <AIO_API_KEY>",
                )
                return
        await self.door(scope, receive, send)

    def _authorised(self, scope: Scope, port: int) -> bool:
        """The preview cookie for this port, or the key in ``X-AIO-API-Key``/``X-API-Key`` (never
        ``Authorization``, nor the gateway's session cookie: those are the app's)."""
        headers = dict(scope["headers"])
        for name in _KEY_HEADERS:
            value = headers.get(name)
            if value is not None and hmac.compare_digest(value.strip(), self.key):
                return True
        raw = headers.get(b"cookie")
        token = cookie_parser(raw.decode("latin-1")).get(PREVIEW_COOKIE) if raw else None
        return bool(token) and self.grants.sessions.holds(token or "", port)

    async def _redeem(self, scope: Scope, send: Send, port: int, ticket: str, query: bytes) -> None:
        """A good ticket: the cookie, and back to the URL without it. A spent one is forgiven to a
        browser already holding the cookie (a bookmarked link), else refused."""
        redeemed = self.grants.tickets.redeem(ticket, port)
        if not redeemed and not self._authorised(scope, port):
            await _refuse(
                scope,
                send,
                401,
                f"Unauthorized: the preview ticket for port {port} was used, has expired or is for another port",
                "ask for a new one with POST /tickets/preview",
            )
            return
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        location = _local_path(path) + (b"?" + query if query else b"")
        headers = [
            (b"location", location),
            (b"cache-control", b"no-store"),
            (b"referrer-policy", b"no-referrer"),
            (b"content-length", b"0"),
        ]
        if redeemed:
            headers.append(preview_cookie(self.grants.sessions.issue(port), scope))
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
