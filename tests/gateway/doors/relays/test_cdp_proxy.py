"""The gateway's ``/cdp/`` proxy: Chromium's ``/json`` answers rewritten to the gateway's public
address, and Playwright from outside connecting through it, behind the API key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentbox_gateway.doors.relays.cdp import rewrite_targets
from agentbox_gateway.doors.shared.addresses import public_base
from tests.support import shared_http
from tests.support.headless_chromium import Chromium, keyed_chromium_settings
from tests.support.jsonrpc import call_tool, tool_json
from tests.support.servers import console_script, free_port, run_command, stop_group

pytestmark = pytest.mark.chromium
KEY = "cdp-proxy-key"
AUTH = {"Authorization": f"Bearer {KEY}"}

gateway_settings = keyed_chromium_settings(KEY)


def test_public_base_honours_forwarded_headers_and_ignores_junk() -> None:
    assert public_base({"host": "10.1.2.3:8091"}, "http", "127.0.0.1:1") == "http://10.1.2.3:8091"
    forwarded = {
        "host": "gw:8091",
        "x-forwarded-proto": "https, http",
        "x-forwarded-host": "a.example, b",
        "x-forwarded-prefix": "/sandbox/1/",
    }
    assert public_base(forwarded, "http", "127.0.0.1:1") == "https://a.example/sandbox/1"
    junk = {"host": "evil/path?x", "x-forwarded-proto": "gopher", "x-forwarded-prefix": "/a b"}
    assert public_base(junk, "http", "127.0.0.1:18091") == "http://127.0.0.1:18091"


def test_rewrite_points_every_address_at_the_gateway() -> None:
    target = {
        "id": "P1",
        "type": "page",
        "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/page/P1",
        "devtoolsFrontendUrl": "https://frontend.example/inspector.html?ws=127.0.0.1:9222/devtools/page/P1",
    }
    [rewritten] = rewrite_targets([target], "https://box.example/pfx")
    assert rewritten["webSocketDebuggerUrl"] == "wss://box.example/pfx/cdp/devtools/page/P1"
    assert rewritten["devtoolsFrontendUrl"] == (
        "https://frontend.example/inspector.html?wss=box.example/pfx/cdp/devtools/page/P1"
    )
    assert rewritten["id"] == "P1"


def test_json_endpoints_are_rewritten(gateway: str, chromium: Chromium) -> None:
    direct = shared_http.get(f"{chromium.cdp_url}/json/version").json()
    authority = gateway.removeprefix("http://")
    for path in ("/cdp/json/version", "/cdp/json/version/"):
        version = shared_http.get(gateway + path, headers=AUTH).json()
        assert version["Browser"] == direct["Browser"]
        browser_path = direct["webSocketDebuggerUrl"].split(":", 2)[2].split("/", 1)[1]
        assert version["webSocketDebuggerUrl"] == f"ws://{authority}/cdp/{browser_path}"
    forwarded = shared_http.get(
        f"{gateway}/cdp/json/list",
        headers={**AUTH, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "box.example", "X-Forwarded-Prefix": "/p"},
    ).json()
    pages = [t for t in forwarded if t["type"] == "page"]
    assert pages
    assert all(t["webSocketDebuggerUrl"].startswith("wss://box.example/p/cdp/devtools/page/") for t in pages)
    listed = shared_http.get(f"{gateway}/cdp/json", headers=AUTH).json()
    assert {t["id"] for t in listed} >= {t["id"] for t in pages}


def test_json_endpoints_need_the_key(gateway: str) -> None:
    assert shared_http.get(f"{gateway}/cdp/json/version").status_code == 401
    wrong = {"Authorization": "Bearer wrong"}
    assert shared_http.get(f"{gateway}/cdp/json/version", headers=wrong).status_code == 401


def test_playwright_connects_through_the_gateway_with_the_key(gateway: str, chromium: Chromium, pages_url: str) -> None:
    with sync_playwright() as playwright:
        direct = playwright.chromium.connect_over_cdp(chromium.cdp_url)
        page = direct.contexts[0].new_page()
        page.goto(f"{pages_url}/form")
        page.fill("#name", "set directly")
        outside = playwright.chromium.connect_over_cdp(f"{gateway}/cdp", headers=AUTH)
        try:
            seen = [p for c in outside.contexts for p in c.pages if p.url == f"{pages_url}/form"]
            assert len(seen) == 1
            assert seen[0].input_value("#name") == "set directly"
            seen[0].fill("#name", "set through the proxy")
            assert page.input_value("#name") == "set through the proxy"
        finally:
            outside.close()
            page.close()
            direct.close()


def test_playwright_is_refused_without_the_key(gateway: str) -> None:
    with sync_playwright() as playwright, pytest.raises(PlaywrightError):
        playwright.chromium.connect_over_cdp(f"{gateway}/cdp", timeout=10_000)
    with sync_playwright() as playwright, pytest.raises(PlaywrightError):
        # the WebSocket itself is guarded too, not only the /json discovery
        ws_url = shared_http.get(f"{gateway}/cdp/json/version", headers=AUTH).json()["webSocketDebuggerUrl"]
        playwright.chromium.connect_over_cdp(ws_url, timeout=10_000)


def test_browser_get_info_cdp_url_speaks_cdp(gateway: str) -> None:
    info = tool_json(call_tool(f"{gateway}/mcp", "browser_get_info", headers=AUTH))
    with connect(info["cdp_url"], additional_headers=AUTH, max_size=None, proxy=None) as socket:
        socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        reply = json.loads(socket.recv(timeout=10))
    assert reply["id"] == 1 and reply["result"]["userAgent"] == info["user_agent"]
    assert reply["result"]["product"].startswith(("Chrome/", "HeadlessChrome/"))


@pytest.fixture
def aiod(chromium: Chromium) -> Iterator[tuple[str, subprocess.Popen]]:
    """``aiod start`` as shipped (its own logging, INFO), with the key, in front of the test Chromium."""
    port = free_port()
    env = {"AIO_API_KEY": KEY, "AIO_CDP_URL": chromium.cdp_url, "LOG_LEVEL": "INFO", "LOG_FORMAT": ""}
    with run_command(
        [console_script("aiod"), "start", "--port", str(port)], env=env, ready_url=f"http://127.0.0.1:{port}/health"
    ) as process:
        yield f"http://127.0.0.1:{port}", process


def stop_and_read(process: subprocess.Popen) -> str:
    stop_group(process)
    assert process.stdout is not None
    return process.stdout.read().decode(errors="replace")


def browser_version(socket_url: str, **kwargs: Any) -> dict[str, Any]:
    with connect(socket_url, max_size=None, proxy=None, **kwargs) as socket:
        socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        return json.loads(socket.recv(timeout=10))


def test_a_key_in_the_url_is_answered_with_a_single_use_ticket(aiod: tuple[str, subprocess.Popen]) -> None:
    gateway, process = aiod
    answer = shared_http.get(f"{gateway}/cdp/json/version", params={"api_key": KEY})
    assert answer.status_code == 200 and KEY not in answer.text
    socket_url = answer.json()["webSocketDebuggerUrl"]
    assert "?ticket=" in socket_url and "api_key" not in socket_url
    assert browser_version(socket_url)["result"]["product"]
    with pytest.raises(InvalidStatus) as second:
        browser_version(socket_url)
    assert second.value.response.status_code == 401
    listed = shared_http.get(f"{gateway}/cdp/json/list", params={"api_key": KEY}).json()
    assert all("ticket=" in t["webSocketDebuggerUrl"] and KEY not in json.dumps(t) for t in listed)
    with_header = shared_http.get(f"{gateway}/cdp/json/version", headers=AUTH).json()["webSocketDebuggerUrl"]
    assert "?" not in with_header and browser_version(with_header, additional_headers=AUTH)["id"] == 1
    info = tool_json(call_tool(f"{gateway}/mcp?api_key={KEY}", "browser_get_info"))
    assert KEY not in info["cdp_url"] and browser_version(info["cdp_url"])["id"] == 1
    rest = shared_http.get(f"{gateway}/v1/browser/info", params={"api_key": KEY}).json()["data"]
    assert KEY not in rest["cdp_url"] and browser_version(rest["cdp_url"])["id"] == 1
    assert KEY not in stop_and_read(process)


def test_websocket_logs_carry_no_key_and_no_traceback(aiod: tuple[str, subprocess.Popen]) -> None:
    gateway, process = aiod
    socket_url = shared_http.get(f"{gateway}/cdp/json/version", headers=AUTH).json()["webSocketDebuggerUrl"]
    for _ in range(3):
        assert browser_version(f"{socket_url}?api_key={KEY}")["id"] == 1  # closed normally by the client
    with pytest.raises(InvalidStatus):
        browser_version(f"{socket_url}?apiToken=other-secret&api_key=wrong-{KEY}")
    logs = stop_and_read(process)
    assert '"WebSocket /cdp/devtools/browser/' in logs and "api_key=[redacted len=" in logs, logs
    assert KEY not in logs and "other-secret" not in logs
    assert "Traceback" not in logs and "ERROR" not in logs, logs


def test_playwright_with_the_key_in_the_endpoint_url_connects_through_a_ticket(
    aiod: tuple[str, subprocess.Popen],
) -> None:
    """Playwright asks ``<endpoint>/json/version/?api_key=…`` and then opens the socket URL it got."""
    gateway, process = aiod
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(f"{gateway}/cdp?api_key={KEY}", timeout=20_000)
        try:
            assert browser.version
        finally:
            browser.close()
    logs = stop_and_read(process)
    assert KEY not in logs and "?ticket=[redacted len=43" in logs, logs
