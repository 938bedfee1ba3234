"""The live view against a real display stack (Xvfb, x11vnc, headful Chromium): ``vnc_url`` opens
noVNC from the gateway, it connects on load through ``/vnc/websockify`` and its canvas shows the
page the browser is on; a key holder's ``vnc_url`` carries a single-use ticket; ``DISABLE_VNC``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.browser_pages import browser_context
from tests.support.display import Display, display_stack
from tests.support.jsonrpc import call_tool, tool_json
from tests.support.servers import serve_app

pytestmark = pytest.mark.chromium
KEY = "live-view-key-7c0ffee"
BEARER = {"Authorization": f"Bearer {KEY}"}
NOVNC = Path("/usr/share/novnc")


@pytest.fixture(scope="module")
def display() -> Iterator[Display]:
    if not (NOVNC / "vnc.html").exists():
        pytest.skip("Debian's novnc is not installed")
    with display_stack() as stack:
        yield stack


@pytest.fixture
def live_gateway(gateway_settings: GatewaySettings, display: Display) -> Iterator[str]:
    settings = replace(
        gateway_settings,
        api_key=KEY,
        cdp_url=display.cdp_url,
        vnc_enabled=True,
        vnc_address=f"127.0.0.1:{display.vnc_port}",
        novnc_dir=NOVNC,
    )
    with serve_app(build_app(settings)) as url:
        yield url


@contextlib.contextmanager
def tab(cdp_url: str, url: str) -> Iterator[None]:
    """A new tab at ``url`` in front (what the display shows), through DevTools' HTTP endpoint."""
    target = httpx.put(f"{cdp_url}/json/new?{url}").json()
    httpx.get(f"{cdp_url}/json/activate/{target['id']}")
    try:
        yield
    finally:
        httpx.get(f"{cdp_url}/json/close/{target['id']}")


def canvas_centre(page: Page) -> list[int]:
    return page.evaluate("""() => {
        const canvas = document.querySelector('#noVNC_container canvas');
        if (!canvas || !canvas.width) return [];
        const ctx = canvas.getContext('2d');
        return Array.from(ctx.getImageData(canvas.width / 2, canvas.height / 2, 1, 1).data);
    }""")


def test_the_live_view_shows_the_page_the_browser_is_on(live_gateway: str, display: Display, pages_url: str) -> None:
    with tab(display.cdp_url, f"{pages_url}/color/rgb(0,200,80)"):
        info = httpx.get(f"{live_gateway}/v1/browser/info", headers=BEARER).json()["data"]
        vnc_url = info["vnc_url"]
        assert vnc_url.startswith(f"{live_gateway}/vnc/index.html?autoconnect=true")
        assert "path=vnc%2Fwebsockify" in vnc_url and "ticket=" in vnc_url and KEY not in vnc_url
        with browser_context(live_gateway) as (context, recorder):
            page = context.new_page()
            page.goto(vnc_url)
            deadline = time.monotonic() + 20
            pixel: list[int] = []
            while time.monotonic() < deadline:
                pixel = canvas_centre(page)
                if pixel[:3] == [0, 200, 80]:
                    break
                time.sleep(0.2)
            assert pixel[:3] == [0, 200, 80]
            assert recorder.foreign == []
            again = context.browser.new_context()
            try:  # the ticket was used up by the first page load
                assert again.new_page().goto(vnc_url).status == 401
            finally:
                again.close()


def test_mcp_browser_get_info_has_a_vnc_url_with_a_ticket(live_gateway: str) -> None:
    info = tool_json(call_tool(f"{live_gateway}/mcp", "browser_get_info", headers=BEARER))
    assert info["vnc_url"].startswith(f"{live_gateway}/vnc/index.html?") and "ticket=" in info["vnc_url"]
    forwarded = httpx.get(
        f"{live_gateway}/v1/browser/info",
        headers={
            **BEARER,
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "box.example",
            "X-Forwarded-Prefix": "/s/1",
        },
    )
    assert forwarded.json()["data"]["vnc_url"].startswith(
        "https://box.example/s/1/vnc/index.html?autoconnect=true&resize=scale&path=s%2F1%2Fvnc%2Fwebsockify&ticket="
    )


def test_the_bridge_needs_auth(live_gateway: str) -> None:
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    assert httpx.get(f"{live_gateway}/vnc/websockify", headers=upgrade).status_code == 401
    assert httpx.get(f"{live_gateway}/vnc/app/ui.js").status_code == 401


def test_disable_vnc_turns_the_live_view_off(gateway_settings: GatewaySettings, display: Display) -> None:
    env = {"DISPLAY": display.name, "DISABLE_VNC": "true", "AIO_CDP_URL": display.cdp_url}
    settings = GatewaySettings.from_env(env)
    assert not settings.vnc_enabled and GatewaySettings.from_env({"DISPLAY": ":9"}).vnc_enabled
    assert not GatewaySettings.from_env({}).vnc_enabled
    with serve_app(build_app(replace(gateway_settings, cdp_url=display.cdp_url))) as url:
        assert httpx.get(f"{url}/vnc/index.html").status_code == 404
        assert httpx.get(f"{url}/v1/browser/info").json()["data"]["vnc_url"] == ""
