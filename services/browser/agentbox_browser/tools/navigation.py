"""browser_navigate, browser_go_back, browser_go_forward, and the wait that lets an action's
navigation (a link clicked, a form submitted with Enter) finish before the tool answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from mcp import types
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page, Request, Response
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..session import BrowserSession, first_line
from .base import Arguments, BrowserTool, ToolError, schema, text_result
from .elements import index_elements, listing

T = TypeVar("T")

#: How soon after an action a navigation must start to be waited for (seconds).
NAVIGATION_GRACE = 0.1
#: How long a navigation that ended without a new document (a download, a 204) gets to commit anyway.
COMMIT_GRACE = 0.5

ELEMENTS_HEADER = (
    "clickable elements(Might be outdated, if an error occurs with the index element, "
    "use `browser_get_clickable_elements` to refresh it): "
)


#: Schemes whose URLs have no ``//`` authority; any other URL without ``://`` lacks its scheme
#: (``example.com``, ``localhost:3000``).
_OPAQUE_SCHEMES = {"about", "data", "javascript", "blob", "view-source", "chrome"}


def check_url(url: str) -> str:
    url = url.strip()
    if not url:
        raise ToolError("url must not be empty")
    if "://" not in url and urlsplit(url).scheme.lower() not in _OPAQUE_SCHEMES:
        raise ToolError(f"invalid URL {url!r}: include the scheme, e.g. http://{url}")
    return url


#: How long a navigation that failed in the network gets for Chromium to commit its error page.
ERROR_PAGE_GRACE_MS = 2000


async def load(page: Page, url: str, wait_until: Any, timeout_ms: float) -> Response | None:
    """``page.goto``; after a network failure it waits for Chromium's error page, which commits a
    moment after the failure is reported and would otherwise interrupt the agent's next navigation."""
    try:
        return await page.goto(url, wait_until=wait_until, timeout=timeout_ms)
    except PlaywrightError as exc:
        message = str(exc)
        if not isinstance(exc, PlaywrightTimeoutError) and "net::ERR_" in message and "ERR_ABORTED" not in message:
            with contextlib.suppress(PlaywrightError):
                await page.wait_for_url(lambda at: at.startswith("chrome-error://"), timeout=ERROR_PAGE_GRACE_MS)
        raise


async def goto(session: BrowserSession, page: Page, url: str) -> Response | None:
    """Load ``url`` in ``page``; unreachable URLs and timeouts become ToolErrors naming the URL."""
    try:
        return await load(page, url, "load", session.nav_timeout_ms)
    except PlaywrightTimeoutError:
        raise ToolError(
            f"navigation to {url} timed out after {session.nav_timeout_ms / 1000:g} s (the page may still be loading)"
        ) from None
    except PlaywrightError as exc:
        if not session.connected:
            raise
        raise ToolError(f"navigation to {url} failed: {first_line(exc)}") from None


def _status_note(response: Response | None) -> str:
    return f" (HTTP {response.status})" if response is not None and response.status >= 400 else ""


async def navigate(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    url = check_url(args["url"])
    page = await session.page()
    response = await goto(session, page, url)
    lines = await index_elements(page)
    return text_result(f"Navigated to {page.url}{_status_note(response)}\n{ELEMENTS_HEADER}\n{listing(lines)}")


async def has_entry(page: Page, step: int) -> bool:
    """Whether the tab's history has an entry ``step`` away from the current one."""
    cdp = await page.context.new_cdp_session(page)
    try:
        history = await cdp.send("Page.getNavigationHistory")
    finally:
        await cdp.detach()
    current: int = history["currentIndex"]
    return 0 <= current + step < len(history["entries"])


async def _history(session: BrowserSession, direction: str) -> types.CallToolResult:
    page = await session.page()
    if not await has_entry(page, -1 if direction == "back" else 1):
        raise ToolError(
            f"cannot go {direction}: there is no {'previous' if direction == 'back' else 'next'} "
            "page in this tab's history"
        )
    move = page.go_back if direction == "back" else page.go_forward
    try:
        await move(wait_until="load", timeout=session.nav_timeout_ms)
    except PlaywrightTimeoutError:
        raise ToolError(f"navigating {direction} timed out (the page may still be loading)") from None
    return text_result(f"Navigated {direction} to {page.url}")


async def go_back(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    return await _history(session, "back")


async def go_forward(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    return await _history(session, "forward")


async def settle(session: BrowserSession, page: Page, action: Callable[[], Awaitable[T]]) -> T:
    """Run ``action``; if it starts a main-frame navigation, wait until the new document has loaded,
    and if it opens a tab (which becomes the current one), until that tab has loaded."""
    main = page.main_frame
    timeout_ms = session.nav_timeout_ms
    started, committed, ended = asyncio.Event(), asyncio.Event(), asyncio.Event()

    def on_request(request: Request) -> None:
        if request.is_navigation_request() and request.frame == main:
            started.set()

    def on_request_end(request: Request) -> None:
        if request.is_navigation_request() and request.frame == main:
            ended.set()

    def on_navigated(frame: Frame) -> None:
        if frame == main:
            committed.set()

    listeners: dict[Any, Any] = {  # Page.on is typed per event name; these are the names it accepts
        "request": on_request,
        "requestfinished": on_request_end,
        "requestfailed": on_request_end,
        "framenavigated": on_navigated,
    }
    for event, listener in listeners.items():
        page.on(event, listener)
    try:
        with session.watch_new_pages() as new_pages:
            result = await action()
            await _wait_any([started, new_pages.created], NAVIGATION_GRACE)
            if new_pages.created.is_set():
                await _wait_any([new_pages.surfaced], timeout_ms / 1000)
                for opened in new_pages.pages:
                    with contextlib.suppress(PlaywrightError):
                        await opened.wait_for_load_state("load", timeout=timeout_ms)
        if started.is_set():
            await _wait_any([committed, ended], timeout_ms / 1000)
            if not committed.is_set():
                await _wait_any([committed], COMMIT_GRACE)
            if committed.is_set():
                with contextlib.suppress(PlaywrightError):
                    await page.wait_for_load_state("load", timeout=timeout_ms)
        return result
    finally:
        for event, listener in listeners.items():
            page.remove_listener(event, listener)


async def _wait_any(events: list[asyncio.Event], within: float) -> None:
    if any(event.is_set() for event in events):
        return
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=within, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


TOOLS = [
    BrowserTool(
        "browser_navigate",
        "Navigate the current tab to a URL and wait for the page to load. Returns the final URL and the "
        "page's indexed clickable elements (use the indexes with browser_click, "
        "browser_form_input_fill, ...).",
        schema(
            {"url": {"type": "string", "description": "The URL to open, with its scheme (https://...)"}},
            required=["url"],
        ),
        navigate,
    ),
    BrowserTool(
        "browser_go_back",
        "Go back to the previous page in the current tab's history.",
        schema(),
        go_back,
    ),
    BrowserTool(
        "browser_go_forward",
        "Go forward to the next page in the current tab's history.",
        schema(),
        go_forward,
    ),
]
