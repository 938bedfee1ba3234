"""ASGI middleware guarding every route, MCP, REST, CDP and the pages alike: the ``Host`` check
(DNS rebinding), the ``Origin`` check (a web page cannot drive a local sandbox) and the ``AIO_API_KEY``
check (a header, a browser session cookie or a single-use ticket). A refusal on ``/mcp`` is a
JSON-RPC error object, a page load gets the login form, elsewhere the REST envelope."""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbox_common.asgi import refuse
from agentbox_common.hosts import is_loopback_name, split_host
from agentbox_common.keys import key_matches

from ..doors.mcp.edge import MCP_PATH, jsonrpc_http_error
from . import browser_sessions
from .tickets import CREDENTIAL_SCOPE, TICKET_PARAM, WHOLE_GATEWAY, TicketStore, covers
from .views import VIEW_SCOPE

#: Routes anyone may call, even with a key set: AIO's public set, less the docs page (its assets are
#: served by the gateway, and no path rule skips auth), plus the login form's target, which checks
#: the key itself.
PUBLIC_PATHS = frozenset({"/health", "/ready", "/v1/ping", "/v1/openapi.json", "/v2/openapi.json", "/login"})
#: Scope key set by :class:`ApiKeyGuard` when the caller authenticated in the URL: a function
#: issuing a ticket, for doors that hand out URLs (see :func:`url_ticket`).
_TICKET_ISSUER = "agentbox.issue_ticket"
#: Scope key set by :class:`ApiKeyGuard` for every authenticated caller: a function issuing a
#: ticket, for page URLs meant for a person's fresh browser (see :func:`page_ticket`).
_PAGE_TICKET_ISSUER = "agentbox.issue_page_ticket"
_CHALLENGE = ((b"www-authenticate", b'Bearer realm="agentbox"'),)
#: Scope key set by :class:`ApiKeyGuard` on a public path when a key is configured and the caller
#: did not present it (see :func:`anonymous`).
_ANONYMOUS = "agentbox.anonymous"


def anonymous(scope: Scope) -> bool:
    """Whether the caller of a public path is a stranger: a key is set and they sent none (or a
    wrong one). Public routes answer them less (``/ready`` counts what it would name)."""
    return bool(scope.get(_ANONYMOUS))


def origin_matches(origin: str, pattern: str) -> bool:
    """Exact match, or ``scheme://host:*`` matching that host on any port."""
    if origin == pattern:
        return True
    if pattern.endswith(":*"):
        return origin.startswith(pattern[:-1]) and origin[len(pattern) - 1 :].isdigit()
    return False


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Whether ``origin`` is listed in ``allowed`` (``AIO_ALLOWED_ORIGINS``)."""
    return any(origin_matches(origin, pattern) for pattern in allowed)


def loopback_origin(origin: str) -> bool:
    """An ``http(s)`` origin on a loopback host (another port of this machine, ``*.localhost``)."""
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and is_loopback_name(parts.hostname)


def own_host_names() -> frozenset[str]:
    """The names this machine or container is reached by from itself: its host name, its fully
    qualified name and the addresses they resolve to (a container's own IP), lower-cased."""
    names: set[str] = set()
    try:
        hostname = socket.gethostname()
        names.update({hostname, socket.getfqdn(hostname)})
        for *_, address in socket.getaddrinfo(hostname, None, proto=socket.IPPROTO_TCP):
            ip = str(address[0]).split("%")[0]
            names.add(f"[{ip}]" if ":" in ip else ip)
    except OSError:
        pass
    return frozenset(name.lower() for name in names if name)


def host_allowed(value: str, allowed: Iterable[str], own_names: Iterable[str] = ()) -> bool:
    """Loopback names and ``own_names`` on any port; an ``allowed`` entry exactly (``name`` or
    ``name:port``), or on any port with ``name:*``. Malformed values are refused."""
    parts = split_host(value)
    if parts is None:
        return False
    name, port = parts
    if is_loopback_name(name.strip("[]")) or name in own_names:
        return True
    authority = f"{name}:{port}" if port else name
    for pattern in allowed:
        pattern = pattern.strip().lower()
        if pattern == authority or (pattern.endswith(":*") and pattern[:-2] == name):
            return True
    return False


async def _refuse(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    hint: str | None = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    """Refuse before the app runs: on ``/mcp`` a JSON-RPC error, elsewhere the REST envelope."""
    if scope["path"] == MCP_PATH:
        body = jsonrpc_http_error(f"{message} ({hint})" if hint else message)
    else:
        body = {"success": False, "message": message, "data": None, "hint": hint}
    await refuse(scope, send, status, body, headers)


class HostGuard:
    """Answer 421 to a ``Host`` that is not loopback, this machine's own name or allowlisted.
    Active without an API key (a rebound web page can read a key-less gateway otherwise), and with a
    key only when ``AIO_ALLOWED_HOSTS`` is set. A request without ``Host`` is not from a browser."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str],
        active: bool,
        own_names: Iterable[str] | None = None,
        preview_host: Callable[[str], bool] | None = None,
    ) -> None:
        self.app = app
        self.allowed = tuple(allowed_hosts)
        self.active = active
        self.own_names = frozenset(own_host_names() if own_names is None else own_names)
        #: Whether a ``Host`` is a preview host (``AIO_PREVIEW_HOST``), served like an allowed one.
        self.preview_host = preview_host
        # A client sends the same few Host values again and again; parsing one costs a few µs.
        self._host_allowed = functools.lru_cache(maxsize=256)(self._judge)

    def _judge(self, host: bytes) -> bool:
        value = host.decode("latin-1")
        parts = split_host(value)
        if parts is not None and self.preview_host is not None and self.preview_host(parts[0]):
            return True
        return host_allowed(value, self.allowed, self.own_names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.active and scope["type"] in ("http", "websocket"):
            host = dict(scope["headers"]).get(b"host")
            if host is not None and not self._host_allowed(host):
                await _refuse(
                    scope,
                    send,
                    421,
                    "Misdirected request: Host not allowed",
                    "list the name clients use in AIO_ALLOWED_HOSTS",
                )
                return
        await self.app(scope, receive, send)


class OriginGuard:
    """Refuse (403) a request whose ``Origin`` is not this gateway's own (the host it was sent to)
    nor listed in ``AIO_ALLOWED_ORIGINS``. Another loopback origin (a dev server's page, a preview
    origin) is foreign too: it is served only on a keyed gateway to a caller presenting the key in
    a header (a page that holds the key is the person's own tool), never on a key-less one, where
    anything the page sends would be taken as the person's. A request a view grant let in
    (:mod:`.views`) comes from a host's frame of any origin: its token is what authorises it."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str], keyed: bool = False) -> None:
        self.app = app
        self.allowed = tuple(allowed_origins)
        self.keyed = keyed

    def _allowed(self, scope: Scope, origin: str) -> bool:
        if VIEW_SCOPE in scope or browser_sessions.same_origin(scope) or origin_allowed(origin, self.allowed):
            return True
        return self.keyed and loopback_origin(origin) and header_key(scope) is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = dict(scope["headers"]).get(b"origin")
            if origin is not None and not self._allowed(scope, origin.decode("latin-1")):
                await _refuse(
                    scope,
                    send,
                    403,
                    "Forbidden: origin not allowed",
                    "open the page from the gateway itself, or list the page's origin in AIO_ALLOWED_ORIGINS",
                )
                return
        await self.app(scope, receive, send)


class PageHeaders:
    """Add the headers that keep another site's page from framing or re-typing the gateway's
    answers to every response but a previewed app's (its headers are the app's): ``frame-ancestors
    'self'`` (and ``X-Frame-Options: SAMEORIGIN`` for browsers without CSP) unless
    ``AIO_FRAME_ANCESTORS`` lists more embedders, and ``X-Content-Type-Options: nosniff``."""

    def __init__(self, app: ASGIApp, frame_ancestors: Iterable[str] = (), exempt: Iterable[str] = ()) -> None:
        self.app = app
        self.exempt = tuple(exempt)
        ancestors = " ".join(("'self'", *frame_ancestors))
        self.headers = [
            (b"content-security-policy", f"frame-ancestors {ancestors}".encode("latin-1")),
            (b"x-content-type-options", b"nosniff"),
        ]
        if not frame_ancestors:  # X-Frame-Options cannot name other origins; CSP alone then decides
            self.headers.append((b"x-frame-options", b"SAMEORIGIN"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt):
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await self.app(scope, receive, sending)


def header_key(scope: Scope) -> str | None:
    """The key a request carries in a header: Bearer, ``x-api-key`` or ``x-aio-api-key``."""
    headers: dict[bytes, bytes] = dict(scope["headers"])
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    for name in (b"x-api-key", b"x-aio-api-key"):
        if name in headers:
            return headers[name].decode("latin-1")
    return None


def _query_value(scope: Scope, name: str) -> str | None:
    query: bytes = scope.get("query_string", b"")
    for key, value in parse_qsl(query.decode("latin-1")):
        if key == name:
            return value
    return None


def url_ticket(scope: Scope, prefix: str) -> str | None:
    """``ticket=<t>`` for a URL handed to a caller who authenticated in the URL (``?api_key=`` or
    ``?ticket=``), good once under ``prefix``; None when the URL needs nothing (no key configured,
    or the caller sends a header it will send again) or ``prefix`` is outside the caller's scope."""
    issue: Callable[[str], str | None] | None = scope.get(_TICKET_ISSUER)
    return _ticket_query(issue(prefix)) if issue is not None else None


def page_ticket(scope: Scope, prefix: str) -> str | None:
    """``ticket=<t>`` for a page URL handed to any key holder (the person who opens it has no
    session yet; the ticket's first use signs their browser in, for ``prefix`` only); None when no
    key is configured or ``prefix`` is outside the caller's scope."""
    issue: Callable[[str], str | None] | None = scope.get(_PAGE_TICKET_ISSUER)
    return _ticket_query(issue(prefix)) if issue is not None else None


def _ticket_query(ticket: str | None) -> str | None:
    return f"{TICKET_PARAM}={ticket}" if ticket is not None else None


@dataclass(frozen=True)
class _Credential:
    """How a request authenticated (``header``, ``cookie``, ``url``, ``ticket`` or a view
    grant, ``view``) and what it opens."""

    kind: str
    scope: str = WHOLE_GATEWAY


#: The key's two forms open everything: one instance each, not one per request.
_BY_HEADER, _BY_URL = _Credential("header"), _Credential("url")


class ApiKeyGuard:
    """With a key configured, every non-public route answers 401 unless the key is presented (a
    header, or ``?api_key=``), a browser session is (the ``agentbox_session`` cookie, used only as
    :func:`browser_sessions.cookie_use_allowed` says) or a ticket from ``tickets`` is (``?ticket=``,
    once; on a plain HTTP request it also signs the browser in, for the ticket's scope only). A
    session or ticket opens only the paths its scope covers. A browser loading a page without any
    of them gets the login form."""

    def __init__(
        self, app: ASGIApp, api_key: str, tickets: TicketStore | None = None, sessions: TicketStore | None = None
    ) -> None:
        self.app = app
        self.api_key = api_key
        # Not ``or``: an empty store is falsy (it has a length), and the doors share these ones.
        self.tickets = TicketStore() if tickets is None else tickets
        self.sessions = TicketStore(ttl=browser_sessions.SESSION_TTL) if sessions is None else sessions

    def _credential(self, scope: Scope) -> _Credential | None:
        """How the request authenticated, or None if it did not (for this path)."""
        key = header_key(scope)
        if key is not None:
            return _BY_HEADER if key_matches(key, self.api_key) else None
        session = browser_sessions.session_token(scope)
        granted = self.sessions.holds(session, scope["path"]) if session else None
        if granted is not None:
            return _Credential("cookie", granted)
        key = _query_value(scope, "api_key")
        if key is not None:
            return _BY_URL if key_matches(key, self.api_key) else None
        ticket = _query_value(scope, TICKET_PARAM)
        granted = self.tickets.redeem(ticket, scope["path"]) if ticket is not None else None
        return _Credential("ticket", granted) if granted is not None else None

    def _issuer(self, within: str) -> Callable[[str], str | None]:
        """Issue tickets for prefixes inside ``within`` only (the store's own method for a credential
        that opens everything: the key's every request, so nothing is built for it)."""
        if within == WHOLE_GATEWAY:
            return self.tickets.issue

        def issue(prefix: str) -> str | None:
            return self.tickets.issue(prefix) if covers(within, prefix) else None

        return issue

    def _signing_in(self, scope: Scope, send: Send, within: str) -> Send:
        """``send`` adding a new session's cookie, good for ``within``, to the response."""
        cookie = browser_sessions.session_cookie(self.sessions.issue(within), scope)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), cookie]}
            await send(message)

        return sending

    def _known(self, scope: Scope) -> bool:
        """Whether a caller of a public path presents the key in a header or a browser session
        (no ticket is spent, and a key in the URL is not looked for, on a route that needs none)."""
        key = header_key(scope)
        if key is not None:
            return key_matches(key, self.api_key)
        session = browser_sessions.session_token(scope)
        if not session or self.sessions.holds(session, scope["path"]) is None:
            return False
        return browser_sessions.cookie_use_allowed(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.api_key:
            await self.app(scope, receive, send)
            return
        if scope["path"] in PUBLIC_PATHS:
            if not self._known(scope):
                scope[_ANONYMOUS] = True
            await self.app(scope, receive, send)
            return
        view = scope.get(VIEW_SCOPE)
        credential = _Credential("view", view) if view is not None else self._credential(scope)
        if credential is not None and credential.kind == "cookie" and not browser_sessions.cookie_use_allowed(scope):
            await _refuse(
                scope,
                send,
                403,
                "Forbidden: the session cookie is only good from this gateway's own pages",
                "open the page from the gateway itself, or send Authorization: Bearer <AIO_API_KEY>",
            )
            return
        if credential is None:
            if browser_sessions.wants_page(scope):
                await browser_sessions.send_login_page(scope, send)
            else:
                await _refuse(
                    scope,
                    send,
                    401,
                    "Unauthorized: missing or invalid API key",
                    "send Authorization: Bearer <AIO_API_KEY>",
                    _CHALLENGE,
                )
            return
        scope[CREDENTIAL_SCOPE] = credential.scope
        scope[_PAGE_TICKET_ISSUER] = self._issuer(credential.scope)
        if credential.kind in ("url", "ticket"):
            scope[_TICKET_ISSUER] = scope[_PAGE_TICKET_ISSUER]
        if credential.kind == "ticket" and scope["type"] == "http":
            send = self._signing_in(scope, send, credential.scope)
        await self.app(scope, receive, send)
