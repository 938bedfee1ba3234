"""Credentials of the preview origins (see ``doors/relays/preview_host.py`` for how a preview host is
served): with ``AIO_API_KEY`` set a preview is opened with a credential good for that port only, a
single-use preview ticket (``POST /tickets/preview``, never accepted by the gateway's own guard)
redeemed as ``?agentbox_preview=<t>``, which sets the HttpOnly, host-only ``agentbox_preview``
cookie. ``SameSite=Lax``, not ``Strict``: the ticket arrives on a navigation from the dashboard
(another site), and a Strict cookie would be left off the redirect that follows it."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from ..doors.shared.addresses import gateway_base, request_public_base
from ..planes.preview import PreviewHosts
from ..settings import GatewaySettings
from . import browser_sessions
from .tickets import WHOLE_GATEWAY, TicketStore, credential_scope

#: The query parameter carrying a preview ticket (never passed to the app).
TICKET_PARAM = "agentbox_preview"
#: The cookie authorising one preview origin (set there by the gateway).
PREVIEW_COOKIE = "agentbox_preview"
#: The gateway's own cookies: the preview relay never sends them to an app, and drops an app's
#: ``Set-Cookie`` of these names so it cannot overwrite them.
GATEWAY_COOKIES = frozenset({browser_sessions.SESSION_COOKIE, PREVIEW_COOKIE})


class PortGrants:
    """Tokens each good for one port: single-use tickets (:meth:`redeem`) or sessions (:meth:`holds`).
    A ticket store of its own, so no guard of the gateway ever takes one of these for anything else."""

    def __init__(self, ttl: float) -> None:
        self._store = TicketStore(ttl=ttl)

    @property
    def ttl(self) -> float:
        return self._store.ttl

    @staticmethod
    def _scope(port: int) -> str:
        return f"preview:{port}"

    def issue(self, port: int) -> str:
        return self._store.issue(self._scope(port))

    def redeem(self, token: str, port: int) -> bool:
        """True once for a live token of ``port``; gone after, whether it matched or not."""
        return self._store.redeem(token, self._scope(port)) is not None

    def holds(self, token: str, port: int) -> bool:
        return self._store.holds(token, self._scope(port)) is not None


class PreviewGrants:
    """The preview tickets (``AIO_TICKET_TTL``) and the preview sessions behind the cookie."""

    def __init__(self, ticket_ttl: float) -> None:
        self.tickets = PortGrants(ticket_ttl)
        self.sessions = PortGrants(browser_sessions.SESSION_TTL)


def _is_https(scope: Scope) -> bool:
    forwarded = dict(scope["headers"]).get(b"x-forwarded-proto", b"").decode("latin-1")
    return forwarded.split(",")[0].strip().lower() in ("https", "wss") or scope.get("scheme") in ("https", "wss")


def preview_cookie(token: str, scope: Scope) -> tuple[bytes, bytes]:
    value = f"{PREVIEW_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={int(browser_sessions.SESSION_TTL)}"
    return b"set-cookie", (value + "; Secure" if _is_https(scope) else value).encode("latin-1")


def _invalid(message: str) -> JSONResponse:
    body = {"success": False, "message": message, "data": None, "hint": 'send {"port": 3000}'}
    return JSONResponse(body, status_code=400)


def routes(settings: GatewaySettings, hosts: PreviewHosts, grants: PreviewGrants) -> list[BaseRoute]:
    """``POST /tickets/preview`` (behind the guard like every route): a single-use ticket opening
    the preview of one port, and the preview origin's URL carrying it for the caller."""
    fallback = gateway_base(settings)

    async def issue(request: Request) -> Response:
        body: Any = None
        try:
            body = await request.json()
        except ValueError:
            pass
        port = body.get("port") if isinstance(body, dict) else None
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            return _invalid("Invalid request: 'port' must be a port number from 1 to 65535")
        if port == settings.port:
            return _invalid(f"Port {port} is the gateway's own port; it has no preview")
        if credential_scope(request.scope) != WHOLE_GATEWAY:  # a scoped credential opens no preview
            return browser_sessions.out_of_scope(request, "ask with the API key, or a session from the sign-in form")
        origin = hosts.origin_url(request_public_base(request, fallback), port)
        ticket = grants.tickets.issue(port) if settings.api_key else None
        url = f"{origin}?{TICKET_PARAM}={ticket}" if origin and ticket else origin
        data = {"port": port, "ticket": ticket, "url": url, "expires_in": int(grants.tickets.ttl)}
        return JSONResponse({"success": True, "message": "Preview ticket issued", "data": data, "hint": None})

    return [Route("/tickets/preview", issue, methods=["POST"])]
