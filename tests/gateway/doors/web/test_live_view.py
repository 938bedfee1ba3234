"""The live view against a real display stack (Xvfb, x11vnc, headful Chromium): ``vnc_url`` opens
noVNC from the gateway, it connects on load through ``/vnc/websockify`` and its canvas shows the
page the browser is on; a key holder's ``vnc_url`` carries a single-use ticket; ``DISABLE_VNC``."""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from playwright.sync_api import Page

from agentbox_gateway.app import build_app
from agentbox_gateway.auth.tickets import TICKET_PARAM as TICKET
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.browser_pages import browser_context, status_elsewhere
from tests.support.display import Display, live_view_settings
from tests.support.headless_chromium import shown_page
from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.png import decode_png
from tests.support.servers import serve_app

pytestmark = pytest.mark.chromium
KEY = "live-view-key-7c0ffee"
BEARER = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture
def live_gateway(gateway_settings: GatewaySettings, display: Display) -> Iterator[str]:
    settings = live_view_settings(gateway_settings, display, KEY)
    with serve_app(build_app(settings)) as url:
        yield url


@contextlib.contextmanager
def tab(cdp_url: str, url: str) -> Iterator[None]:
    """A new tab at ``url`` in front (what the display shows), through DevTools' HTTP endpoint."""
    target = shared_http.put(f"{cdp_url}/json/new?{url}").json()
    shared_http.get(f"{cdp_url}/json/activate/{target['id']}")
    try:
        yield
    finally:
        shared_http.get(f"{cdp_url}/json/close/{target['id']}")


def canvas_centre(page: Page) -> list[int]:
    return page.evaluate("""() => {
        const canvas = document.querySelector('#noVNC_container canvas');
        if (!canvas || !canvas.width) return [];
        const ctx = canvas.getContext('2d');
        return Array.from(ctx.getImageData(canvas.width / 2, canvas.height / 2, 1, 1).data);
    }""")


def test_the_live_view_shows_the_page_the_browser_is_on(live_gateway: str, display: Display, pages_url: str) -> None:
    with tab(display.cdp_url, f"{pages_url}/color/rgb(0,200,80)"):
        info = shared_http.get(f"{live_gateway}/v1/browser/info", headers=BEARER).json()["data"]
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
            assert status_elsewhere(context, vnc_url) == 401  # the ticket was used up by the first page load


#: Whether noVNC's control bar is open at the page's first frame or opens later, and the colour under
#: the picture at that first frame.
_WATCH_THE_BAR = """document.addEventListener("DOMContentLoaded", () => {
    const bar = document.getElementById("noVNC_control_bar");
    window.barOpenAt = [];
    new MutationObserver(() => bar.classList.contains("noVNC_open") && window.barOpenAt.push(Date.now()))
        .observe(bar, { attributes: true });
    requestAnimationFrame(() => {
        window.firstFrameBarOpen = bar.classList.contains("noVNC_open");
        window.firstFrameBackground = getComputedStyle(document.getElementById("noVNC_container")).backgroundColor;
    });
});"""


def test_the_live_view_opens_on_the_picture(live_gateway: str, display: Display, pages_url: str) -> None:
    """Issue 28 item 11: noVNC's page loads with no failed request (its ``package.json`` included), its
    control bar is never drawn open over the picture, and until the picture comes the page is a light
    placeholder, not a dark empty canvas."""
    info = shared_http.get(f"{live_gateway}/v1/browser/info", headers=BEARER).json()["data"]
    with tab(display.cdp_url, f"{pages_url}/color/rgb(0,200,80)"), browser_context(live_gateway) as (context, _):
        page = context.new_page()
        failed: list[str] = []
        page.on("response", lambda response: failed.append(response.url) if response.status >= 400 else None)
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.add_init_script(_WATCH_THE_BAR)
        page.goto(info["vnc_url"])
        deadline = time.monotonic() + 20
        while canvas_centre(page)[:3] != [0, 200, 80] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert canvas_centre(page)[:3] == [0, 200, 80]
        assert page.evaluate("window.firstFrameBarOpen") is False
        assert page.evaluate("window.barOpenAt") == []
        assert page.evaluate("window.firstFrameBackground") == "rgb(244, 245, 247)"
        assert "noVNC_open" not in (page.get_attribute("#noVNC_control_bar", "class") or "")
        assert failed == []
        version = shared_http.get(f"{live_gateway}/vnc/package.json", headers=BEARER)
        assert version.status_code == 200 and "version" in version.json()


def test_the_readmes_vnc_address_opens_the_live_view_with_a_vnc_ticket(
    live_gateway: str, display: Display, pages_url: str
) -> None:
    """``/vnc/`` (the README's live view) with a ticket made for ``/vnc/``: a fresh browser lands
    on the connected client, and no ticket is left in its address."""
    with tab(display.cdp_url, f"{pages_url}/color/rgb(30,60,210)"):
        ticket = shared_http.post(f"{live_gateway}/tickets", headers=BEARER, json={"path": "/vnc/"}).json()["data"]
        with browser_context(live_gateway) as (context, recorder):
            page = context.new_page()
            assert page.goto(f"{live_gateway}/vnc/?{TICKET}={ticket['ticket']}").status == 200
            assert page.url.startswith(f"{live_gateway}/vnc/index.html?autoconnect=true")
            assert "ticket" not in page.url
            deadline = time.monotonic() + 20
            pixel: list[int] = []
            while time.monotonic() < deadline and pixel[:3] != [30, 60, 210]:
                time.sleep(0.2)
                pixel = canvas_centre(page)
            assert pixel[:3] == [30, 60, 210]
            assert page.goto(f"{live_gateway}/vnc").url.startswith(f"{live_gateway}/vnc/index.html?")
            assert recorder.foreign == []
    behind = shared_http.get(f"{live_gateway}/vnc/?view_only=true", headers={**BEARER, "X-Forwarded-Prefix": "/s/1"})
    assert behind.status_code == 303
    assert behind.headers["location"] == (
        "/s/1/vnc/index.html?autoconnect=true&resize=scale&path=s%2F1%2Fvnc%2Fwebsockify&view_only=true"
    )


def test_mcp_browser_get_info_has_a_vnc_url_with_a_ticket(live_gateway: str) -> None:
    info = tool_json(call_tool(f"{live_gateway}/mcp", "browser_get_info", headers=BEARER))
    assert info["vnc_url"].startswith(f"{live_gateway}/vnc/index.html?") and "ticket=" in info["vnc_url"]
    forwarded = shared_http.get(
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
    assert shared_http.get(f"{live_gateway}/vnc/websockify", headers=upgrade).status_code == 401
    assert shared_http.get(f"{live_gateway}/vnc/app/ui.js").status_code == 401


def test_disable_vnc_turns_the_live_view_off(gateway_settings: GatewaySettings, display: Display) -> None:
    env = {"AGENTBOX_DISPLAY": display.name, "DISABLE_VNC": "true", "AIO_CDP_URL": display.cdp_url}
    settings = GatewaySettings.from_env(env)
    assert not settings.vnc_enabled and GatewaySettings.from_env({"AGENTBOX_DISPLAY": ":9"}).vnc_enabled
    # a desktop's DISPLAY is not the sandbox's display: no live view, GUI tools stay on DevTools
    assert not GatewaySettings.from_env({"DISPLAY": ":0"}).vnc_enabled
    with serve_app(build_app(replace(gateway_settings, cdp_url=display.cdp_url))) as url:
        assert shared_http.get(f"{url}/vnc/index.html").status_code == 404
        assert shared_http.get(f"{url}/v1/browser/info").json()["data"]["vnc_url"] == ""


def test_the_gui_screenshot_is_the_whole_display(live_gateway: str, display: Display, pages_url: str) -> None:
    with tab(display.cdp_url, f"{pages_url}/color/rgb(200,40,0)"):
        time.sleep(0.5)
        shot = call_tool(f"{live_gateway}/mcp", "browser_gui_screenshot", {}, headers=BEARER)
    [image] = [item for item in shot["content"] if item["type"] == "image"]
    png = decode_png(base64.b64decode(image["data"]))
    assert (png.width, png.height) == display.size
    assert png.pixel(display.size[0] // 2, display.size[1] // 2)[:3] == (200, 40, 0)


def test_a_click_at_the_buttons_screen_coordinates_presses_it(
    live_gateway: str, display: Display, pages_url: str
) -> None:
    def act(action: dict) -> str:
        result = call_tool(f"{live_gateway}/mcp", "browser_gui_execute_action", {"action": action}, headers=BEARER)
        assert not result.get("isError"), result
        return tool_text(result)

    with shown_page(display.cdp_url, f"{pages_url}/form") as page:
        act({"action_type": "CLICK", "x": 140, "y": 70})  # #go: 40..240 x 40..100 on a kiosk screen
        page.wait_for_function("document.title === 'clicked 1'", timeout=20_000)
        act({"action_type": "CLICK", "x": 190, "y": 160})  # #name
        act({"action_type": "TYPING", "text": "Hi, X! é"})
        page.wait_for_function("document.getElementById('name').value === 'Hi, X! é'", timeout=20_000)
        act({"action_type": "HOTKEY", "keys": ["ctrl", "a"]})
        act({"action_type": "PRESS", "key": "Backspace"})
        page.wait_for_function("document.getElementById('name').value === ''", timeout=20_000)
        assert any(e["type"] == "click" and e["target"] == "go" for e in page.evaluate("window.log"))
