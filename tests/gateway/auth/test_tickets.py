"""The ticket store standing for the API key in URLs: single use, short-lived, path-bound, bounded."""

from __future__ import annotations

from agentbox_gateway.auth.tickets import TicketStore, covers


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_ticket_is_good_once_and_only_under_its_prefix() -> None:
    store = TicketStore()
    ticket = store.issue("/cdp/devtools/")
    assert store.redeem(ticket, "/cdp/devtools/browser/1")
    assert not store.redeem(ticket, "/cdp/devtools/browser/1")
    elsewhere = store.issue("/cdp/devtools/")
    assert not store.redeem(elsewhere, "/v1/file/download")
    assert not store.redeem(elsewhere, "/cdp/devtools/browser/1")  # a failed redemption uses it up
    assert not store.redeem("made-up", "/cdp/devtools/x") and len(store) == 0


def test_tickets_expire_and_the_store_stays_bounded() -> None:
    clock = Clock()
    store = TicketStore(ttl=30, capacity=3, clock=clock)
    late = store.issue()
    clock.now += 31
    assert not store.redeem(late, "/")
    tickets = [store.issue() for _ in range(5)]
    assert len(store) == 3
    assert not store.redeem(tickets[0], "/") and store.redeem(tickets[4], "/")
    clock.now += 31
    store.issue()
    assert len(store) == 1  # expired ones are forgotten as the store is used
    assert all(len(t) >= 43 for t in tickets) and len(set(tickets)) == 5


def test_a_scope_covers_whole_segments_only() -> None:
    assert covers("/", "/anything") and covers("/vnc/", "/vnc") and covers("/vnc/", "/vnc/websockify")
    assert covers("/vnc", "/vnc/index.html") and covers("/v1/sandbox", "/v1/sandbox")
    assert not covers("/v", "/v1/sandbox") and not covers("/vnc/", "/vnc2") and not covers("/vnc/", "/")
    store = TicketStore()
    assert store.redeem(store.issue("/vnc/"), "/vnc/index.html") == "/vnc/"
    session = store.issue("/vnc/")
    assert store.holds(session, "/vnc/x") == "/vnc/" and store.holds(session, "/v1/shell/exec") is None
