"""Short-lived, single-use tickets that stand for the API key in a URL.

A URL the gateway hands out (a CDP ``webSocketDebuggerUrl``, ``browser_get_info``'s ``cdp_url``)
must work for a caller who can only put credentials in the URL, yet must never carry the key: URLs
end up in logs, browser histories and error messages. Such a URL carries ``?ticket=<t>`` instead,
good for one use under a path prefix within ``AIO_TICKET_TTL`` seconds. The same store, with a
long lifetime and :meth:`TicketStore.holds` instead of :meth:`TicketStore.redeem`, keeps the
browser sessions behind the ``agentbox_session`` cookie.

Tickets are random (256 bits) and stored only as their SHA-256 digest, so a lookup compares
digests, not the secret (no timing signal about the ticket); the store is bounded (the oldest
ticket goes first) and forgets expired ones as it is used."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

#: The query parameter carrying a ticket.
TICKET_PARAM = "ticket"
#: ``AIO_TICKET_TTL``'s default: long enough for a person to click a link an agent handed them.
DEFAULT_TICKET_TTL = 300.0


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

    def issue(self, prefix: str = "/") -> str:
        """A new ticket good once, for a path starting with ``prefix``, for ``ttl`` seconds."""
        now = self._clock()
        self._forget_expired(now)
        while len(self._grants) >= self.capacity:
            self._grants.popitem(last=False)
        ticket = secrets.token_urlsafe(32)
        self._grants[self._digest(ticket)] = _Grant(now + self.ttl, prefix)
        return ticket

    def redeem(self, ticket: str, path: str) -> bool:
        """True once for a live ticket whose prefix ``path`` starts with; the ticket is then gone
        (also when the path does not match, so a ticket cannot be probed)."""
        grant = self._grants.pop(self._digest(ticket), None)
        return grant is not None and grant.expires > self._clock() and path.startswith(grant.prefix)

    def holds(self, ticket: str) -> bool:
        """True while ``ticket`` is live, without using it up (a session token)."""
        grant = self._grants.get(self._digest(ticket))
        return grant is not None and grant.expires > self._clock()
