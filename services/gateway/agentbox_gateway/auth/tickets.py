"""Short-lived, single-use tickets that stand for the API key in a URL.

A URL the gateway hands out (a CDP ``webSocketDebuggerUrl``, ``browser_get_info``'s ``cdp_url``)
must work for a caller who can only put credentials in the URL, yet must never carry the key: URLs
end up in logs, browser histories and error messages. Such a URL carries ``?ticket=<t>`` instead,
good for one use under a path prefix within ``AIO_TICKET_TTL`` seconds. The same store, with a
long lifetime and :meth:`TicketStore.holds` instead of :meth:`TicketStore.redeem`, keeps the
browser sessions behind the ``agentbox_session`` cookie.

Every grant has a scope, a path prefix matched by whole segments (:func:`covers`): ``/vnc/`` opens
``/vnc`` and what is under it, never ``/vnc2`` or ``/v1``. A session a ticket signed in keeps the
ticket's scope, and a credential mints tickets only inside its own scope, so nothing a scoped
credential leads to is wider than the door it was made for.

Tickets are random (256 bits) and stored only as their SHA-256 digest, so a lookup compares
digests, not the secret (no timing signal about the ticket); the store is bounded (the oldest
ticket goes first) and forgets expired ones as it is used."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: The query parameter carrying a ticket.
TICKET_PARAM = "ticket"
#: The scope of a credential that opens everything: the key, a session from the login form.
WHOLE_GATEWAY = "/"
#: ASGI scope key the API key guard sets for every authenticated caller: the path prefix its
#: credential opens (see :func:`credential_scope`).
CREDENTIAL_SCOPE = "agentbox.credential_scope"
#: ``AIO_TICKET_TTL``'s default: long enough for a person to click a link an agent handed them.
DEFAULT_TICKET_TTL = 300.0


def covers(prefix: str, path: str) -> bool:
    """Whether a grant for ``prefix`` opens ``path``: the same path, or one below it by whole
    segments (``/vnc/`` and ``/vnc`` both open ``/vnc``, ``/vnc/`` and ``/vnc/x``, not ``/vnc2``)."""
    base = prefix.rstrip("/")
    return not base or path == base or path.startswith(base + "/")


def credential_scope(scope: Mapping[str, Any]) -> str:
    """The path prefix the caller of an ASGI ``scope`` may open (``/``: everything, as with the key
    or on a key-less gateway); a scoped credential mints nothing wider."""
    return str(scope.get(CREDENTIAL_SCOPE, WHOLE_GATEWAY))


@dataclass(frozen=True)
class _Grant:
    expires: float
    prefix: str


class TicketStore:
    """Issue and redeem tickets; everything runs on the event loop, so no lock is needed."""

    def __init__(
        self, ttl: float = DEFAULT_TICKET_TTL, capacity: int = 1024, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.capacity = capacity
        self._clock = clock
        self._grants: OrderedDict[bytes, _Grant] = OrderedDict()

    def __len__(self) -> int:
        return len(self._grants)

    @staticmethod
    def _digest(ticket: str) -> bytes:
        return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).digest()

    def _forget_expired(self, now: float) -> None:
        while self._grants:
            digest, grant = next(iter(self._grants.items()))
            if grant.expires > now:
                break
            del self._grants[digest]

    def issue(self, prefix: str = WHOLE_GATEWAY) -> str:
        """A new ticket good once, for a path under ``prefix`` (see :func:`covers`), for ``ttl`` seconds."""
        now = self._clock()
        self._forget_expired(now)
        while len(self._grants) >= self.capacity:
            self._grants.popitem(last=False)
        ticket = secrets.token_urlsafe(32)
        self._grants[self._digest(ticket)] = _Grant(now + self.ttl, prefix)
        return ticket

    def redeem(self, ticket: str, path: str) -> str | None:
        """The scope of a live ticket that covers ``path``, once; the ticket is then gone (also
        when the path does not match, so a ticket cannot be probed). None otherwise."""
        grant = self._grants.pop(self._digest(ticket), None)
        if grant is None or grant.expires <= self._clock() or not covers(grant.prefix, path):
            return None
        return grant.prefix

    def holds(self, ticket: str, path: str = WHOLE_GATEWAY) -> str | None:
        """The scope of ``ticket`` while it is live and covers ``path``, without using it up (a
        session token); None otherwise."""
        grant = self._grants.get(self._digest(ticket))
        if grant is None or grant.expires <= self._clock() or not covers(grant.prefix, path):
            return None
        return grant.prefix
