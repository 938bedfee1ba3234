"""The browser plane on its own, against a real headless Chromium: info, display screenshots and
GUI input dispatched as real events (checked through the page's own event log)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import httpx
import pytest
from playwright.async_api import Page, async_playwright

from agentbox_gateway.doors.shared.browser_links import browser_info_data
from agentbox_gateway.planes.browser import BrowserPlane, BrowserUnavailable, InvalidAction, parse_action
from agentbox_gateway.planes.browser.launch import BrowserLauncher
from agentbox_gateway.settings import GatewaySettings
from tests.support.headless_chromium import Chromium
from tests.support.png import decode_png
from tests.support.servers import free_port

pytestmark = [pytest.mark.anyio, pytest.mark.chromium]


def plane_at(cdp_url: str) -> BrowserPlane:
    """The plane on Chromium at ``cdp_url``, with no browser program to start or wait for."""
    settings = replace(GatewaySettings.from_env({}), cdp_url=cdp_url)
    return BrowserPlane(settings, BrowserLauncher("async", settings.browser_url, registered=False))


@pytest.fixture
async def plane(chromium: Chromium) -> AsyncIterator[BrowserPlane]:
    browser = plane_at(chromium.cdp_url)
    yield browser
    await browser.aclose()


@contextlib.asynccontextmanager
async def shown(cdp_url: str, url: str) -> AsyncIterator[Page]:
    """A new tab at ``url`` in front, seen through Playwright connected straight to Chromium."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(cdp_url)
        page = await browser.contexts[0].new_page()
        try:
            await page.goto(url)
            await page.bring_to_front()
            yield page
        finally:
            await page.close()
            await browser.close()


async def events(page: Page, *types: str) -> list[dict[str, Any]]:
    return [e for e in await page.evaluate("window.log") if e["type"] in types]


async def test_info_reports_public_cdp_url_user_agent_and_viewport(
    plane: BrowserPlane, chromium: Chromium, pages_url: str
) -> None:
    async with httpx.AsyncClient() as client:
        version = (await client.get(f"{chromium.cdp_url}/json/version")).json()
    browser_id = version["webSocketDebuggerUrl"].rsplit("/", 1)[1]
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        info = browser_info_data(await plane.info(), "https://sandbox.example.com/team-a", None)
        assert info["cdp_url"] == f"wss://sandbox.example.com/team-a/cdp/devtools/browser/{browser_id}"
        assert info["user_agent"] == await page.evaluate("navigator.userAgent")
        size = await page.evaluate("[innerWidth, innerHeight]")
        assert info["viewport"] == {"width": size[0], "height": size[1]}
        assert info["vnc_url"] is None
        plain = browser_info_data(await plane.info(), "http://10.0.0.5:8091", None)
        assert plain["cdp_url"] == f"ws://10.0.0.5:8091/cdp/devtools/browser/{browser_id}"  # never a key in it


async def test_screenshot_is_a_png_of_the_page_on_display(
    plane: BrowserPlane, chromium: Chromium, pages_url: str
) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/color/rgb(255,0,0)"):
        red = await plane.screenshot()
        async with shown(chromium.cdp_url, f"{pages_url}/color/rgb(0,0,255)"):
            blue = await plane.screenshot()
            viewport = (await plane.info()).viewport
    for shot, colour in ((red, (255, 0, 0)), (blue, (0, 0, 255))):
        image = decode_png(shot.png, rows=11)
        assert (image.width, image.height) == (shot.width, shot.height)
        assert (shot.width, shot.height) == (viewport["width"], viewport["height"])
        assert image.pixel(10, 10)[:3] == colour
        assert shot.mime_type == "image/png"


async def test_click_and_typing_reach_the_page_at_screenshot_coordinates(
    plane: BrowserPlane, chromium: Chromium, pages_url: str
) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        assert "(140, 70)" in await plane.execute_action({"action_type": "CLICK", "x": 140, "y": 70})
        assert await page.title() == "clicked 1"
        await plane.execute_action({"action_type": "CLICK", "x": 190, "y": 160})
        await plane.execute_action({"action_type": "TYPING", "text": "Hi there, 42!"})
        await plane.execute_action({"action_type": "TYPING", "text": " é中"})
        await plane.execute_action({"action_type": "TYPING", "text": "ü\n", "use_clipboard": False})
        assert await page.input_value("#name") == "Hi there, 42! é中ü"
        keys = [e["key"] for e in await events(page, "keydown")]
        assert keys[:3] == ["H", "i", " "]  # typed key by key, as a keyboard would
        assert "é" not in keys and keys[-2:] == ["ü", "Enter"]  # pasted by default, else a key event


async def test_keys_modifiers_and_hotkeys(plane: BrowserPlane, chromium: Chromium, pages_url: str) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        await plane.execute_action({"action_type": "CLICK", "x": 190, "y": 160})
        await plane.execute_action({"action_type": "KEY_DOWN", "key": "shift"})
        await plane.execute_action({"action_type": "TYPING", "text": "ab1"})
        await plane.execute_action({"action_type": "KEY_UP", "key": "shift"})
        assert await page.input_value("#name") == "AB!"
        await plane.execute_action({"action_type": "HOTKEY", "keys": ["ctrl", "a"]})
        await plane.execute_action({"action_type": "PRESS", "key": "Backspace"})
        assert await page.input_value("#name") == ""
        await plane.execute_action({"action_type": "TYPING", "text": "xy"})
        await plane.execute_action({"action_type": "PRESS", "key": "ctrl+a"})
        await plane.execute_action({"action_type": "PRESS", "key": "Delete"})
        assert await page.input_value("#name") == ""
        ctrl_a = [e for e in await events(page, "keydown") if e["key"] == "a"]
        assert ctrl_a and all(e["ctrl"] and e["code"] == "KeyA" for e in ctrl_a)


async def test_mouse_buttons_double_and_right_click(plane: BrowserPlane, chromium: Chromium, pages_url: str) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        await plane.execute_action({"action_type": "DOUBLE_CLICK", "x": 500, "y": 90})
        await plane.execute_action({"action_type": "RIGHT_CLICK", "x": 450, "y": 60})
        await plane.execute_action({"action_type": "CLICK", "x": 140, "y": 70, "num_clicks": 3})
        log = await events(page, "dblclick", "contextmenu")
        assert [(e["type"], e["x"], e["y"], e["target"]) for e in log] == [
            ("dblclick", 500, 90, "target"),
            ("contextmenu", 450, 60, "target"),
            ("dblclick", 140, 70, "go"),
        ]
        assert await page.title() == "clicked 3"
        details = [e["detail"] for e in await events(page, "click") if e["target"] == "go"]
        assert details == [1, 2, 3]  # one triple click, counted as a person's would be


async def test_drag_moves_with_the_button_held(plane: BrowserPlane, chromium: Chromium, pages_url: str) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        await plane.execute_action({"action_type": "MOVE_TO", "x": 420, "y": 220})
        await plane.execute_action({"action_type": "DRAG_TO", "x": 600, "y": 300})
        await plane.execute_action({"action_type": "MOUSE_DOWN"})
        await plane.execute_action({"action_type": "MOVE_REL", "x_offset": 50, "y_offset": 40})
        await plane.execute_action({"action_type": "MOUSE_UP"})
        await plane.execute_action({"action_type": "DRAG_REL", "x_offset": -100, "y_offset": -100})
        log = await events(page, "mousedown", "mousemove", "mouseup")
        downs = [(e["x"], e["y"]) for e in log if e["type"] == "mousedown"]
        ups = [(e["x"], e["y"]) for e in log if e["type"] == "mouseup"]
        assert downs == [(420, 220), (600, 300), (650, 340)]
        assert ups == [(600, 300), (650, 340), (550, 240)]
        held_moves = [e for e in log if e["type"] == "mousemove" and e["buttons"] == 1]
        assert len(held_moves) >= 10  # a drag moves through the points in between


async def test_scroll_by_notches(plane: BrowserPlane, chromium: Chromium, pages_url: str) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        await plane.execute_action({"action_type": "MOVE_TO", "x": 300, "y": 300})
        assert "dy=3" in await plane.execute_action({"action_type": "SCROLL", "dy": 3})
        for _ in range(50):
            if await page.evaluate("scrollY") == 300:
                break
            await anyio.sleep(0.02)
        assert await page.evaluate("scrollY") == 300


async def test_wait_is_a_pause(plane: BrowserPlane) -> None:
    started = time.monotonic()
    assert await plane.execute_action({"action_type": "WAIT", "duration": 0.3}) == "Waited 0.3 seconds"
    assert time.monotonic() - started >= 0.3


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"action_type": "JUMP"}, "action_type must be one of"),
        ({"x": 1}, "action_type is required"),
        ({"action_type": "MOVE_TO", "x": 1}, "y is required for MOVE_TO"),
        ({"action_type": "CLICK", "x": 5}, "x and y must be given together"),
        ({"action_type": "CLICK", "x": -1, "y": 5}, "x must be >= 0"),
        ({"action_type": "CLICK", "button": "thumb"}, "button must be one of"),
        ({"action_type": "WAIT", "duration": 10.5}, "at most 10 seconds"),
        ({"action_type": "SCROLL", "dy": 101}, "dy must be between -100 and 100"),
        ({"action_type": "SCROLL"}, "non-zero dx or dy"),
        ({"action_type": "PRESS", "key": "hyper"}, "unknown key: 'hyper'"),
        ({"action_type": "HOTKEY", "keys": []}, "keys must be a non-empty list"),
        ({"action_type": "TYPING", "text": 5}, "text must be a string"),
    ],
)
async def test_invalid_actions_are_refused_before_reaching_the_browser(action: dict, message: str) -> None:
    with pytest.raises(InvalidAction, match=message):
        parse_action(action)
    nowhere = plane_at(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(InvalidAction):  # refused as invalid, not as "no browser": nothing was tried
        await nowhere.execute_action(action)
    await nowhere.aclose()


async def test_set_viewport_resizes_the_display(plane: BrowserPlane, chromium: Chromium, pages_url: str) -> None:
    async with shown(chromium.cdp_url, f"{pages_url}/form") as page:
        assert await plane.set_viewport(1024, 768) == {"width": 1024, "height": 768}
        assert await page.evaluate("[innerWidth, innerHeight]") == [1024, 768]
        shot = await plane.screenshot()
        assert (shot.width, shot.height) == (1024, 768)
        assert await plane.set_viewport(1280, 720) == await plane.viewport() == {"width": 1280, "height": 720}
        with pytest.raises(InvalidAction, match="1000x1000 is not one of"):
            await plane.set_viewport(1000, 1000)


async def test_no_chromium_is_a_typed_error() -> None:
    nowhere = plane_at(f"http://127.0.0.1:{free_port()}")
    try:
        status = await nowhere.status()
        assert status["status"] == "absent" and "did not answer" in status["detail"]
        with pytest.raises(BrowserUnavailable):
            await nowhere.info()
        with pytest.raises(BrowserUnavailable):
            await nowhere.screenshot()
        for action in ({"action_type": "CLICK", "x": 1, "y": 1}, {"action_type": "WAIT", "duration": 0}):
            with pytest.raises(BrowserUnavailable):
                await nowhere.execute_action(action)
    finally:
        await nowhere.aclose()


async def test_status_reports_ready(plane: BrowserPlane, chromium: Chromium) -> None:
    status = await plane.status()
    assert status["status"] == "ready" and status["cdp"] == chromium.cdp_url
    assert status["browser"].startswith(("Chrome/", "HeadlessChrome/"))
