"""Auth for browsers (issue 13): with ``AIO_API_KEY`` set, the pages, their assets and the
terminal WebSocket need the key; the login form trades it for an HttpOnly, SameSite=Strict session
cookie; ``POST /tickets`` hands out single-use, expiring URL tickets; the cookie is refused from
another origin (a WebSocket even with a valid cookie)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.servers import serve_app

KEY = "dashboard-key-for-tests-0123456789"
BEARER = {"Authorization": f"Bearer {KEY}"}
PAGE = {"Accept": "text/html,application/xhtml+xml"}
GUARDED = [
    "/",
    "/index.html",
    "/static/dashboard.js",
    "/static/dashboard.js?x=.js",
    "/static/vendor/xterm/xterm.css",
    "/v1/docs",
    "/static/vendor/swagger-ui/swagger-ui-bundle.js",
    "/llms.txt",
    "/vnc/index.html",
]


class Clock:
    """The keyed gateway's clock: real time plus however far a test moved it on."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skipped


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def keyed(gateway_settings: GatewaySettings, clock: Clock) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY, ticket_ttl=1.0), clock=clock)) as url:
        yield url


pytestmark = pytest.mark.usefixtures("own_home")


def login(base: str) -> str:
    """Sign in through the form; the session cookie's value."""
    response = shared_http.post(f"{base}/login", data={"key": KEY, "next": "/"})
    assert response.status_code == 303
    return response.cookies["agentbox_session"]


def cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"agentbox_session={token}"}


def ws_url(base: str, path: str = "/v1/shell/ws") -> str:
    return base.replace("http://", "ws://") + path


def test_pages_and_assets_need_the_key(keyed: str) -> None:
    for path in GUARDED:
        response = shared_http.get(keyed + path)
        assert response.status_code == 401, path
        assert shared_http.get(keyed + path, headers=BEARER).status_code in (200, 404), path
    with pytest.raises(InvalidStatus) as refused:
        connect(ws_url(keyed), open_timeout=5).close()
    assert refused.value.response.status_code == 401


def test_a_page_load_without_the_key_shows_the_login_form(keyed: str) -> None:
    form = shared_http.get(f"{keyed}/vnc/index.html?autoconnect=true", headers=PAGE)
    assert form.status_code == 401 and form.headers["content-type"].startswith("text/html")
    assert 'method="post" action="../login"' in form.text and 'type="password"' in form.text
    assert 'value="/vnc/index.html?autoconnect=true"' in form.text and KEY not in form.text


def test_login_sets_a_strict_http_only_cookie_that_opens_everything(keyed: str) -> None:
    wrong = shared_http.post(f"{keyed}/login", data={"key": "nope", "next": "/"})
    assert wrong.status_code == 401 and "not right" in wrong.text and "set-cookie" not in wrong.headers
    response = shared_http.post(f"{keyed}/login", data={"key": KEY, "next": "/v1/docs"})
    assert response.status_code == 303 and response.headers["location"] == "./v1/docs"
    set_cookie = response.headers["set-cookie"]
    assert set_cookie.startswith("agentbox_session=") and KEY not in set_cookie
    for flag in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert flag in set_cookie
    token = response.cookies["agentbox_session"]
    for path in GUARDED:
        assert shared_http.get(keyed + path, headers=cookie(token)).status_code in (200, 404), path
    assert shared_http.get(f"{keyed}/v1/sandbox", headers=cookie(token)).status_code == 200
    assert shared_http.get(f"{keyed}/v1/sandbox", headers=cookie("made-up")).status_code == 401


def test_login_only_returns_to_a_path_of_this_gateway(keyed: str) -> None:
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"):
        response = shared_http.post(f"{keyed}/login", data={"key": KEY, "next": target})
        assert response.headers["location"] == "./", target


def test_logout_ends_the_session(keyed: str) -> None:
    token = login(keyed)
    assert shared_http.post(f"{keyed}/logout", headers={**cookie(token), "Origin": keyed}).status_code == 200
    assert shared_http.get(f"{keyed}/llms.txt", headers=cookie(token)).status_code == 401


def test_a_ticket_works_once_and_signs_the_browser_in(keyed: str) -> None:
    assert shared_http.post(f"{keyed}/tickets").status_code == 401
    issued = shared_http.post(f"{keyed}/tickets", headers=BEARER).json()["data"]
    assert issued["expires_in"] == 1 and issued["path"] == "/"
    first = shared_http.get(f"{keyed}/llms.txt?ticket={issued['ticket']}")
    assert first.status_code == 200 and "agentbox" in first.text
    assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
    assert shared_http.get(f"{keyed}/llms.txt", headers=cookie(first.cookies["agentbox_session"])).status_code == 200
    assert shared_http.get(f"{keyed}/llms.txt?ticket={issued['ticket']}").status_code == 401


def test_an_expired_ticket_is_refused(keyed: str, clock: Clock) -> None:
    ticket = shared_http.post(f"{keyed}/tickets", headers=BEARER).json()["data"]["ticket"]
    clock.skipped += 1.3
    assert shared_http.get(f"{keyed}/llms.txt?ticket={ticket}").status_code == 401


def test_tickets_for_a_path_and_with_the_cookie(keyed: str) -> None:
    token = login(keyed)
    own = {**cookie(token), "Origin": keyed}
    ticket = shared_http.post(f"{keyed}/tickets", headers=own, json={"path": "/vnc/"}).json()["data"]["ticket"]
    assert shared_http.get(f"{keyed}/llms.txt?ticket={ticket}").status_code == 401  # outside its path
    bad = shared_http.post(f"{keyed}/tickets", headers=BEARER, json={"path": "vnc"})
    assert bad.status_code == 400 and "path" in bad.json()["message"]
    assert shared_http.post(f"{keyed}/tickets", headers=BEARER, content=b"{").status_code == 400


def test_the_cookie_changes_nothing_from_another_origin(keyed: str) -> None:
    token = login(keyed)
    listing = {"path": "/"}
    for headers in ({}, {"Origin": "http://localhost:3000"}, {"Origin": "null"}):
        refused = shared_http.post(f"{keyed}/v1/file/list", json=listing, headers={**cookie(token), **headers})
        assert refused.status_code == 403, headers
    own = shared_http.post(f"{keyed}/v1/file/list", json=listing, headers={**cookie(token), "Origin": keyed})
    assert own.status_code == 200 and own.json()["success"]
    assert (
        shared_http.get(f"{keyed}/llms.txt", headers={**cookie(token), "Origin": "http://localhost:3000"}).status_code
        == 403
    )


def test_a_websocket_from_a_foreign_origin_is_refused_even_with_a_valid_cookie(keyed: str) -> None:
    token = login(keyed)
    for origin in ("http://localhost:3000", "http://127.0.0.1:1", None):
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url(keyed), additional_headers=cookie(token), origin=origin, open_timeout=5).close()
        assert refused.value.response.status_code == 403, origin
    with connect(ws_url(keyed), additional_headers=cookie(token), origin=keyed, open_timeout=5) as socket:
        socket.send(b"echo own-$((20+1))\n")
        seen = b""
        deadline = time.monotonic() + 10
        while b"own-21" not in seen and time.monotonic() < deadline:
            seen += socket.recv(timeout=10)
    assert b"own-21" in seen
