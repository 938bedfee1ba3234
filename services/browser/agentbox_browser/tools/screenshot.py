"""browser_screenshot: the current page (viewport or full page) or one element, as PNG image content,
optionally at another viewport size (restored afterwards) and with the element indexes drawn on."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import struct

from mcp import types
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from ..session import BrowserSession
from .base import Arguments, BrowserTool, ToolError, image_result, schema
from .elements import INDEX_ATTRIBUTE, highlight, index_elements, locate, unhighlight


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    width, height = struct.unpack(">II", png[16:24])
    return width, height


async def capture_viewport(session: BrowserSession, page: Page) -> bytes:
    """The viewport as Chromium captures it, in one CDP round trip. Playwright's ``page.screenshot``
    makes five (a script in every frame hiding the caret, one awaiting web fonts, the layout metrics,
    the capture, a clean-up script): ~15% of a viewport screenshot. Like mcp-server-browser's
    (Puppeteer's), this capture leaves the caret as it is."""
    cdp = await session.cdp_session(page)
    try:
        async with asyncio.timeout(session.nav_timeout_ms / 1000):
            shot = await cdp.send("Page.captureScreenshot", {"format": "png"})
    except TimeoutError:
        raise ToolError(f"browser_screenshot failed: Timeout {session.nav_timeout_ms:g}ms exceeded.") from None
    return base64.b64decode(shot["data"])


async def screenshot(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await session.page()
    name = args.get("name") or "screenshot"
    index, selector = args.get("index"), args.get("selector")
    width, height = args.get("width"), args.get("height")
    original = page.viewport_size or session.viewport
    resized = width is not None or height is not None
    if resized:
        await page.set_viewport_size({"width": width or original["width"], "height": height or original["height"]})
    try:
        if args.get("highlight"):
            if await page.locator(f"[{INDEX_ATTRIBUTE}]").count() == 0:
                await index_elements(page)
            await highlight(page)
        try:
            if index is not None or selector:
                element = await locate(page, index=index, selector=selector)
                png = await element.screenshot(timeout=session.nav_timeout_ms)
            elif args.get("fullPage"):
                png = await page.screenshot(full_page=True, timeout=session.nav_timeout_ms)
            else:
                png = await capture_viewport(session, page)
        finally:
            if args.get("highlight"):
                with contextlib.suppress(PlaywrightError):
                    await unhighlight(page)
    finally:
        if resized:
            with contextlib.suppress(PlaywrightError):
                await page.set_viewport_size(original)
    shot_width, shot_height = png_size(png)
    return image_result(f"Screenshot '{name}' taken at {shot_width}x{shot_height}", png)


SIZE = {"type": "integer", "minimum": 1, "maximum": 10000}

TOOLS = [
    BrowserTool(
        "browser_screenshot",
        "Take a PNG screenshot of the current page (the viewport, or the whole page with fullPage) or of one "
        "element (index or CSS selector).",
        schema(
            {
                "name": {"type": "string", "description": "Name for the screenshot"},
                "selector": {"type": "string", "description": "CSS selector for element to screenshot"},
                "index": {"type": "integer", "description": "index of the element to screenshot"},
                "width": {**SIZE, "description": "Width in pixels (default: viewport width)"},
                "height": {**SIZE, "description": "Height in pixels (default: viewport height)"},
                "fullPage": {"type": "boolean", "default": False, "description": "Full page screenshot"},
                "highlight": {
                    "type": "boolean",
                    "default": False,
                    "description": "Draw the clickable elements' indexes on the screenshot",
                },
            }
        ),
        screenshot,
    ),
]
