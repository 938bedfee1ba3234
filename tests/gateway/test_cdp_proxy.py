"""The gateway's ``/cdp/`` proxy: Chromium's ``/json`` answers rewritten to the gateway's public
address, and Playwright from outside connecting through it, behind the API key."""

from __future__ import annotations

import json
from dataclasses import replace

import httpx
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright
from websockets.sync.client import connect

from agentbox_gateway.cdp_proxy import public_base, rewrite_targets
from agentbox_gateway.settings import GatewaySettings
from tests.support.headless_chromium import Chromium
from tests.support.jsonrpc import call_tool, tool_json

pytestmark = pytest.mark.chromium
KEY = "cdp-proxy-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings, chromium: Chromium) -> GatewaySettings:
    return replace(gateway_settings, cdp_url=chromium.cdp_url, api_key=KEY)


def test_public_base_honours_forwarded_headers_and_ignores_junk() -> None:
    assert public_base({"host": "10.1.2.3:8091"}, "http", "127.0.0.1:1") == "http://10.1.2.3:8091"
    forwarded = {"host": "gw:8091", "x-forwarded-proto": "https, http", "x-forwarded-host": "a.example, b",
                 "x-forwarded-prefix": "/sandbox/1/"}
    assert public_base(forwarded, "http", "127.0.0.1:1") == "https://a.example/sandbox/1"
    junk = {"host": "evil/path?x", "x-forwarded-proto": "gopher", "x-forwarded-prefix": "/a b"}
    assert public_base(junk, "http", "127.0.0.1:18091") == "http://127.0.0.1:18091"


def test_rewrite_points_every_address_at_the_gateway() -> None:
    target = {"id": "P1", "type": "page",
              "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/page/P1",
              "devtoolsFrontendUrl":
                  "https://frontend.example/inspector.html?ws=127.0.0.1:9222/devtools/page/P1"}
    [rewritten] = rewrite_targets([target], "https://box.example/pfx")
    assert rewritten["webSocketDebuggerUrl"] == "wss://box.example/pfx/cdp/devtools/page/P1"
    assert rewritten["devtoolsFrontendUrl"] == (
        "https://frontend.example/inspector.html?wss=box.example/pfx/cdp/devtools/page/P1")
    assert rewritten["id"] == "P1"


def test_json_endpoints_are_rewritten(gateway: str, chromium: Chromium) -> None:
    direct = httpx.get(f"{chromium.cdp_url}/json/version").json()
    authority = gateway.removeprefix("http://")
    for path in ("/cdp/json/version", "/cdp/json/version/"):
        version = httpx.get(gateway + path, headers=AUTH).json()
        assert version["Browser"] == direct["Browser"]
        browser_path = direct["webSocketDebuggerUrl"].split(":", 2)[2].split("/", 1)[1]
        assert version["webSocketDebuggerUrl"] == f"ws://{authority}/cdp/{browser_path}"
    forwarded = httpx.get(f"{gateway}/cdp/json/list", headers={
        **AUTH, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "box.example",
        "X-Forwarded-Prefix": "/p"}).json()
    pages = [t for t in forwarded if t["type"] == "page"]
    assert pages
    assert all(t["webSocketDebuggerUrl"].startswith("wss://box.example/p/cdp/devtools/page/") for t in pages)
    listed = httpx.get(f"{gateway}/cdp/json", headers=AUTH).json()
    assert {t["id"] for t in listed} >= {t["id"] for t in pages}


def test_json_endpoints_need_the_key(gateway: str) -> None:
    assert httpx.get(f"{gateway}/cdp/json/version").status_code == 401
    wrong = {"Authorization": "Bearer wrong"}
    assert httpx.get(f"{gateway}/cdp/json/version", headers=wrong).status_code == 401


def test_playwright_connects_through_the_gateway_with_the_key(gateway: str, chromium: Chromium,
                                                             pages_url: str) -> None:
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
        ws_url = httpx.get(f"{gateway}/cdp/json/version", headers=AUTH).json()["webSocketDebuggerUrl"]
        playwright.chromium.connect_over_cdp(ws_url, timeout=10_000)


def test_browser_get_info_cdp_url_speaks_cdp(gateway: str) -> None:
    info = tool_json(call_tool(f"{gateway}/mcp", "browser_get_info", headers=AUTH))
    with connect(info["cdp_url"], additional_headers=AUTH, max_size=None, proxy=None) as socket:
        socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        reply = json.loads(socket.recv(timeout=10))
    assert reply["id"] == 1 and reply["result"]["userAgent"] == info["user_agent"]
    assert reply["result"]["product"].startswith(("Chrome/", "HeadlessChrome/"))
