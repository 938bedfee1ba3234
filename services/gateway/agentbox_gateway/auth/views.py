"""View grants: the credential of an MCP App view (the live view, the terminal, a preview rendered by
an MCP host in a sandboxed frame of its own origin).

Such a frame has no session (a ``SameSite=Strict`` cookie is never sent to a frame of another site),
cannot put a header on a module script or a WebSocket, and its requests carry the host's origin
(or ``null``), which the origin check refuses. A tool that opens a view (``browser_get_info``,
``sandbox_open_terminal``, ``sandbox_get_context``'s previews) therefore hands the view, in its
result's ``_meta`` (which hosts give the view, not the model), a grant: a random token good for one
path prefix (``/vnc/``, ``/terminal/``, ``/proxy/<port>/``) for ``AIO_TICKET_TTL`` seconds. The view
reaches that prefix as ``/apps/<token>/<path>``, so the relative imports of noVNC's modules and the
WebSocket keep the token without anyone appending it. :class:`ViewGate` checks the token, takes it
out of the path before anything else sees the request (the access log included) and lets the
request through with a credential scoped to the grant's prefix, from any origin: the token, not
the origin or a cookie, is what authorises it, and a page that cannot call the gateway's tools
cannot get one. Its answers carry ``Access-Control-Allow-Origin: *`` (module scripts are fetched
in CORS mode), which opens them to nobody without the token.

The key never appears in these URLs; the grants are stored as digests like tickets
(:class:`TicketStore`), a store of their own so no other guard ever takes one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbox_common.asgi import refuse

from .tickets import CREDENTIAL_SCOPE, TicketStore, covers, credential_scope

#: The path a view's requests come under: ``/apps/<token>/<path under the grant's prefix>``.
VIEW_ROOT = "/apps/"
#: ASGI scope key :class:`ViewGate` sets on a request a view grant let in: the grant's prefix.
VIEW_SCOPE = "agentbox.view_scope"
#: ASGI scope key :class:`ViewGate` sets on every other request: a function issuing a grant (see
#: :func:`view_root`).
_VIEW_ISSUER = "agentbox.issue_view_grant"
_CORS = (b"access-control-allow-origin", b"*")


class ViewGrants:
    """Issue and check view grants; like tickets, random, stored as digests, bounded and short-lived,
    but good for every request under their prefix until they expire (a view loads many files)."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = TicketStore(ttl=ttl, clock=clock)

    @property
    def ttl(self) -> float:
        return self._store.ttl

    def issue(self, prefix: str) -> str:
        return self._store.issue(prefix)

    def holds(self, token: str, path: str) -> str | None:
        """The grant's prefix while ``token`` is live and covers ``path``; None otherwise."""
        return self._store.holds(token, path)


def view_root(scope: Scope | None, prefix: str) -> str | None:
    """``/apps/<token>``: the root a view reaches ``prefix`` under, for the caller of ``scope``;
    None without a request, or when ``prefix`` is outside what the caller's credential opens."""
    issue: Callable[[str], str] | None = scope.get(_VIEW_ISSUER) if scope is not None else None
    if issue is None or not covers(credential_scope(scope or {}), prefix):
        return None
    return f"{VIEW_ROOT}{issue(prefix)}"


class ViewGate:
    """Serve ``/apps/<token>/<path>`` as ``/<path>`` for a live grant covering it (401 otherwise,
    whatever follows), marked with :data:`VIEW_SCOPE` for the origin and key guards; every other
    request is handed the means to issue grants (:func:`view_root`)."""

    def __init__(self, app: ASGIApp, grants: ViewGrants) -> None:
        self.app = app
        self.grants = grants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if not path.startswith(VIEW_ROOT):
            scope[_VIEW_ISSUER] = self.grants.issue
            await self.app(scope, receive, send)
            return
        token, _, rest = path[len(VIEW_ROOT) :].partition("/")
        inner = "/" + rest
        granted = self.grants.holds(token, inner) if token else None
        if granted is None:
            body: dict[str, Any] = {
                "success": False,
                "message": "Unauthorized: this view's grant is unknown, expired or for another path",
                "data": None,
                "hint": "call the tool that opened the view again for a new one",
            }
            await refuse(scope, send, 401, body, ())
            return
        # In place, so the access log (outside) records the path without the token.
        scope["path"] = inner
        scope["raw_path"] = inner.encode("latin-1")
        scope[VIEW_SCOPE] = granted
        scope[CREDENTIAL_SCOPE] = granted
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name.lower() == _CORS[0] for name, _ in headers):  # a previewed app's own stands
                    message = {**message, "headers": [*headers, _CORS]}
            await send(message)

        await self.app(scope, receive, sending)
