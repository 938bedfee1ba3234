"""Browser sessions: how a person's browser, which cannot put a header on a page load or a
WebSocket, proves it holds ``AIO_API_KEY``.

A page asked for without credentials shows a login form; ``POST /login`` exchanges the key (in the
form body, never in a URL) for the HttpOnly, ``SameSite=Strict`` ``agentbox_session`` cookie;
``POST /tickets`` gives a key or cookie holder a single-use ``?ticket=`` for a URL that must work
in a fresh browser (a link an agent hands a person), and a ticket's first use on a page signs that
browser in as well.

A browser sends the cookie on its own, so its use is bounded by where the request comes from:
``SameSite`` does not tell ports apart (a dev server on another loopback port is the same site),
hence a WebSocket or a request that changes something must carry this gateway's own ``Origin``, and a
read either its own ``Origin`` or none."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request, cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope, Send

from agentbox_common.keys import key_matches

from .tickets import TicketStore, covers, credential_scope

#: The session cookie's name (the preview relay never passes it to an app, nor lets one set it).
SESSION_COOKIE = "agentbox_session"
#: How long a browser stays signed in (seconds); a gateway restart signs everyone out.
SESSION_TTL = 12 * 3600.0
#: Where ``POST /login`` sends a browser when the form names no page.
_HOME = "/"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return dict(scope.get("headers", []))


def _first(value: bytes | None) -> str:
    return (value or b"").decode("latin-1").split(",")[0].strip().lower()


def session_token(scope: Scope) -> str | None:
    """The ``agentbox_session`` cookie's value, or None."""
    raw = _headers(scope).get(b"cookie")
    return cookie_parser(raw.decode("latin-1")).get(SESSION_COOKIE) if raw else None


def same_origin(scope: Scope) -> bool:
    """True when the request's ``Origin`` names the host it was sent to (``X-Forwarded-Host``
    behind a reverse proxy, else ``Host``); False when it names another or there is none."""
    headers = _headers(scope)
    origin = _first(headers.get(b"origin"))
    host = _first(headers.get(b"x-forwarded-host")) or _first(headers.get(b"host"))
    scheme, sep, authority = origin.partition("://")
    return bool(sep and host) and scheme in ("http", "https") and authority == host


def cookie_use_allowed(scope: Scope) -> bool:
    """Whether a request may be authenticated by its cookie: a WebSocket or a request that changes
    something only from this gateway's own pages, a read also without any ``Origin``."""
    if scope["type"] == "http" and scope.get("method") in _SAFE_METHODS and b"origin" not in _headers(scope):
        return True
    return same_origin(scope)


def _is_https(scope: Scope) -> bool:
    return _first(_headers(scope).get(b"x-forwarded-proto")) in ("https", "wss") or scope.get("scheme") in (
        "https",
        "wss",
    )


def session_cookie(token: str, scope: Scope, max_age: float = SESSION_TTL) -> tuple[bytes, bytes]:
    """The ``Set-Cookie`` header signing a browser in (``Secure`` when it came over HTTPS)."""
    value = f"{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={int(max_age)}"
    if _is_https(scope):
        value += "; Secure"
    return b"set-cookie", value.encode("latin-1")


def wants_page(scope: Scope) -> bool:
    """A browser loading a page (it asked for HTML), which gets the login form instead of a 401 body."""
    accept = _headers(scope).get(b"accept", b"")
    return scope["type"] == "http" and scope.get("method") == "GET" and b"text/html" in accept


def _safe_next(value: str) -> str:
    """A path on this gateway to return to after signing in; anything else goes home."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value or any(ord(c) < 0x20 for c in value):
        return _HOME
    return value


def _relative_to_root(path: str) -> str:
    """``path``'s way back to the gateway's root, so the form works under a reverse-proxy prefix."""
    return "../" * (path.count("/") - 1) or "./"


_LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentbox: sign in</title>
<style>
body {{ font: 16px system-ui, sans-serif; background: #f4f5f7; color: #1d2330; display: grid;
  place-items: center; min-height: 100vh; margin: 0; }}
form {{ background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 1px 4px #0002; width: 22rem; }}
h1 {{ font-size: 1.3rem; margin: 0 0 1rem; }}
input {{ width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; margin: .5rem 0 1rem; }}
button {{ padding: .5rem 1.2rem; font: inherit; }}
.error {{ color: #b00020; }}
</style></head><body>
<form method="post" action="{root}login">
<h1>agentbox</h1>
<p>This sandbox needs its API key (<code>AIO_API_KEY</code>).</p>
{error}<label>API key <input id="key" name="key" type="password" autocomplete="current-password" required
autofocus></label>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button>
</form></body></html>
"""


def login_page(scope: Scope, failed: bool = False) -> bytes:
    """The sign-in form for the page ``scope`` asked for (it comes back there after)."""
    path = scope["path"]
    query = scope.get("query_string", b"").decode("latin-1")
    back = path + (f"?{query}" if query else "")
    error = '<p class="error" role="alert">That key is not right.</p>\n' if failed else ""
    text = _LOGIN_PAGE.format(root=_relative_to_root(path), next=html.escape(back), error=error)
    return text.encode()


async def send_login_page(scope: Scope, send: Send, status: int = 401, failed: bool = False) -> None:
    body = login_page(scope, failed)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def out_of_scope(request: Request, hint: str) -> JSONResponse:
    """The 403 envelope for a scoped credential (a ticket's session) asking beyond its scope."""
    message = f"Forbidden: this credential opens only {credential_scope(request.scope)}"
    return JSONResponse({"success": False, "message": message, "data": None, "hint": hint}, status_code=403)


def routes(api_key: str, tickets: TicketStore, sessions: TicketStore) -> list[BaseRoute]:
    """``POST /login`` (public: it checks the key itself), ``POST /logout`` and ``POST /tickets``
    (behind the guard like every other route)."""

    async def login(request: Request) -> Response:
        form = await request.form()
        key, back = str(form.get("key", "")), _safe_next(str(form.get("next", _HOME)))
        location = "." + back  # relative to /login, so a reverse-proxy prefix is kept
        if not api_key:
            return RedirectResponse(location, status_code=303)
        if not key_matches(key, api_key):
            scope = {**request.scope, "path": back.split("?")[0], "query_string": back.partition("?")[2].encode()}
            return Response(
                login_page(scope, failed=True), 401, media_type="text/html", headers={"cache-control": "no-store"}
            )
        response = RedirectResponse(location, status_code=303)
        name, value = session_cookie(sessions.issue(), request.scope)
        response.raw_headers.append((name, value))
        return response

    async def logout(request: Request) -> Response:
        token = session_token(request.scope)
        if token:
            sessions.redeem(token, "/")
        response = JSONResponse({"success": True, "message": "Signed out", "data": None, "hint": None})
        name, value = session_cookie("", request.scope, max_age=0)
        response.raw_headers.append((name, value))
        return response

    async def issue_ticket(request: Request) -> Response:
        body: Any = {}
        if await request.body():
            try:
                body = await request.json()
            except ValueError:
                body = None
        prefix = body.get("path", _HOME) if isinstance(body, Mapping) else None
        if not isinstance(prefix, str) or not prefix.startswith("/"):
            return JSONResponse(
                {
                    "success": False,
                    "message": "Invalid request: 'path' must be a path starting with /",
                    "data": None,
                    "hint": 'send {"path": "/vnc/"} or no body',
                },
                status_code=400,
            )
        if not covers(credential_scope(request.scope), prefix):
            return out_of_scope(request, "ask with the API key, or a session from the sign-in form, for a wider ticket")
        data = {"ticket": tickets.issue(prefix), "path": prefix, "expires_in": int(tickets.ttl)}
        return JSONResponse({"success": True, "message": "Ticket issued", "data": data, "hint": None})

    return [
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/tickets", issue_ticket, methods=["POST"]),
    ]
