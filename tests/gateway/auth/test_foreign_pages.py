"""Pages on other origins against the gateway (issue 26, items 2, 3 and 4): another loopback page cannot open
a terminal or change anything on a key-less gateway, no page of another origin can frame the
gateway's pages, and a ticket opens exactly the door it was made for, its cookie with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentbox_gateway.app import build_app
from agentbox_gateway.doors.web.live_view import VNC_PREFIX
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.headless_chromium import FLAGS
from tests.support.requirements import require_chromium
from tests.support.servers import serve_app

KEY = "foreign-pages-key-0123456789"
BEARER = {"Authorization": f"Bearer {KEY}"}

pytestmark = pytest.mark.usefixtures("own_home")


def ws(base: str, path: str = "/v1/shell/ws") -> str:
    return base.replace("http://", "ws://") + path


@pytest.fixture
def keyed(gateway_settings: GatewaySettings) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        yield url


def _attacker_app(gateway: str) -> Starlette:
    """A page on another loopback port: it tries the terminal, a command and a frame of the dashboard."""

    async def page(request: Request) -> HTMLResponse:
        script = f"""
        window.results = {{}};
        const socket = new WebSocket({json.dumps(ws(gateway))});
        socket.onopen = () => {{ window.results.socket = "open"; socket.send("touch {{MARK}}\\n"); }};
        socket.onerror = () => {{ window.results.socket = window.results.socket || "refused"; }};
        fetch({json.dumps(gateway + "/v1/shell/exec")}, {{method: "POST", mode: "no-cors",
          headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{command: "touch {{MARK}}"}})}})
          .then(() => {{ window.results.fetch = "sent"; }}, () => {{ window.results.fetch = "failed"; }});
        """
        mark = request.query_params["mark"]
        body = f"""<!doctype html><title>elsewhere</title>
        <iframe id="framed" src="{gateway}/" width="800" height="600"></iframe>
        <script>{script.replace("{MARK}", mark)}</script>"""
        return HTMLResponse(body)

    return Starlette(routes=[Route("/", page)])


def test_another_loopback_page_opens_no_terminal_and_frames_nothing(gateway: str, tmp_path: Path) -> None:
    """In a real Chromium: a key-less gateway, a page on another port of 127.0.0.1."""
    mark = tmp_path / "ran"
    sockets: list[str] = []
    with serve_app(_attacker_app(gateway)) as elsewhere, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        try:
            page = browser.new_page()
            page.on("websocket", lambda socket: sockets.append(socket.url))
            page.goto(f"{elsewhere}/?mark={mark}")
            page.wait_for_function("window.results.socket && window.results.fetch", timeout=15_000)
            results = page.evaluate("window.results")
            framed = page.frame_locator("#framed")
            page.wait_for_timeout(1000)  # let a framed dashboard (if it loaded) open its terminal
            assert framed.locator("#terminal").count() == 0
            assert results["socket"] == "refused"
            assert [url for url in sockets if url.endswith("/v1/shell/ws")] == [ws(gateway)]  # only the page's own try
            own = browser.new_page()  # the gateway's own dashboard still opens its terminal
            own.goto(f"{gateway}/")
            own.wait_for_function("document.querySelector('#terminal-state').textContent.includes('connected')")
        finally:
            browser.close()
    assert not mark.exists()


def test_a_key_less_gateway_refuses_other_loopback_origins_and_serves_its_own(gateway: str) -> None:
    for origin in ("http://127.0.0.1:1", "http://localhost:3000", "http://3000.localhost:" + gateway.rsplit(":", 1)[1]):
        refused = shared_http.post(f"{gateway}/v1/shell/exec", json={"command": "true"}, headers={"Origin": origin})
        assert refused.status_code == 403 and refused.json()["message"].startswith("Forbidden: ")
        with pytest.raises(InvalidStatus) as denied:
            connect(ws(gateway), origin=origin, open_timeout=10)  # type: ignore[arg-type]
        assert denied.value.response.status_code == 403
    own = shared_http.post(f"{gateway}/v1/shell/exec", json={"command": "echo ok"}, headers={"Origin": gateway})
    assert own.status_code == 200 and own.json()["data"]["output"].strip() == "ok"
    with connect(ws(gateway), origin=gateway, open_timeout=10) as socket:  # type: ignore[arg-type]
        socket.send(b"echo own-$((20+1))\n")
        seen = b""
        while b"own-21" not in seen:  # bounded: recv raises TimeoutError after 10 s of silence
            chunk = socket.recv(timeout=10)
            seen += chunk if isinstance(chunk, bytes) else chunk.encode()
    assert (
        shared_http.post(f"{gateway}/v1/shell/exec", json={"command": "true"}).status_code == 200
    )  # no browser, no Origin


def test_with_a_key_a_loopback_page_needs_the_key_in_a_header(keyed: str) -> None:
    origin = {"Origin": "http://localhost:3000"}
    assert shared_http.post(f"{keyed}/v1/shell/exec", json={"command": "true"}, headers=origin).status_code == 403
    served = shared_http.post(f"{keyed}/v1/shell/exec", json={"command": "true"}, headers={**origin, **BEARER})
    assert served.status_code == 200
    ticket = shared_http.post(f"{keyed}/tickets", json={"path": "/v1/"}, headers=BEARER).json()["data"]["ticket"]
    by_ticket = shared_http.post(f"{keyed}/v1/shell/exec?ticket={ticket}", json={"command": "true"}, headers=origin)
    assert by_ticket.status_code == 403


@pytest.mark.parametrize("path", ["/", "/v1/docs", "/vnc/index.html", "/static/dashboard.js", "/v1/sandbox"])
def test_every_gateway_answer_forbids_framing_and_sniffing(gateway: str, path: str) -> None:
    headers = shared_http.get(f"{gateway}{path}").headers
    assert headers["content-security-policy"] == "frame-ancestors 'self'"
    assert headers["x-frame-options"] == "SAMEORIGIN" and headers["x-content-type-options"] == "nosniff"


def test_the_sign_in_page_cannot_be_framed(keyed: str) -> None:
    page = shared_http.get(f"{keyed}/", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "Sign in" in page.text
    assert page.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert page.headers["x-frame-options"] == "SAMEORIGIN"


def test_embedding_is_allowed_only_where_the_setting_says(gateway_settings: GatewaySettings) -> None:
    settings = replace(gateway_settings, frame_ancestors=("https://portal.example.com",))
    with serve_app(build_app(settings)) as url:
        headers = shared_http.get(f"{url}/").headers
    assert headers["content-security-policy"] == "frame-ancestors 'self' https://portal.example.com"
    assert "x-frame-options" not in headers


def _ticket(base: str, path: str) -> str:
    answer = shared_http.post(f"{base}/tickets", json={"path": path}, headers=BEARER)
    assert answer.status_code == 200
    return str(answer.json()["data"]["ticket"])


def test_a_ticket_opens_only_whole_segments_of_its_path(keyed: str) -> None:
    assert shared_http.get(f"{keyed}/v1/sandbox?ticket={_ticket(keyed, '/v')}").status_code == 401
    assert shared_http.get(f"{keyed}/vnc2?ticket={_ticket(keyed, '/vnc')}").status_code == 401
    assert shared_http.get(f"{keyed}/v1/sandbox?ticket={_ticket(keyed, '/v1')}").status_code == 200
    assert shared_http.get(f"{keyed}/v1/sandbox?ticket={_ticket(keyed, '/v1/sandbox')}").status_code == 200


def test_a_live_view_ticket_signs_in_for_the_live_view_only(keyed: str) -> None:
    """Its cookie opens the live view's page and socket, not the shell, the API or a wider ticket."""
    ticket = _ticket(keyed, VNC_PREFIX)  # the prefix a ``vnc_url`` ticket is issued for
    landing = shared_http.get(f"{keyed}/vnc/nonexistent?ticket={ticket}")
    session = landing.cookies["agentbox_session"]
    cookie = {"Cookie": f"agentbox_session={session}", "Origin": keyed}
    # Past the guard (a bare gateway has no live view to show: 404, not the 401 of a refusal).
    assert shared_http.get(f"{keyed}/vnc/index.html", headers={"Cookie": cookie["Cookie"]}).status_code == 404
    assert shared_http.post(f"{keyed}/v1/shell/exec", json={"command": "id"}, headers=cookie).status_code == 401
    assert shared_http.get(f"{keyed}/v1/sandbox", headers={"Cookie": cookie["Cookie"]}).status_code == 401
    assert shared_http.post(f"{keyed}/tickets", json={"path": "/"}, headers=cookie).status_code == 401
    with pytest.raises(InvalidStatus) as denied:
        connect(ws(keyed), origin=keyed, additional_headers={"Cookie": cookie["Cookie"]}, open_timeout=10)  # type: ignore[arg-type]
    assert denied.value.response.status_code == 401


def test_a_scoped_ticket_mints_nothing_wider(keyed: str) -> None:
    narrow = _ticket(keyed, "/tickets")
    wider = shared_http.post(f"{keyed}/tickets?ticket={narrow}", json={"path": "/"})
    assert wider.status_code == 403 and "opens only /tickets" in wider.json()["message"]
    narrow = _ticket(keyed, "/tickets")
    same = shared_http.post(f"{keyed}/tickets?ticket={narrow}", json={"path": "/tickets"})
    assert same.status_code == 200
