"""Tabs of the shared browser context: browser_new_tab, browser_tab_list, browser_switch_tab,
browser_close_tab. Indexes are positions in the context's page list; the current tab is the one the
other tools act on."""

from __future__ import annotations

import contextlib

from mcp import types
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from ..session import BrowserSession
from .base import Arguments, BrowserTool, ToolError, schema, text_result
from .navigation import check_url, goto

TAB_LIST_OUTPUT = {
    "type": "object",
    "properties": {
        "tabList": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "active": {"type": "boolean"},
                    "title": {"type": "string"},
                    "url": {"type": "string"},
                },
                "required": ["index", "active", "title", "url"],
            },
        }
    },
    "required": ["tabList"],
}


async def page_title(page: Page) -> str:
    try:
        return await page.title()
    except PlaywrightError:  # a page that is navigating or closing has no title to give
        return ""


async def tab_entries(session: BrowserSession) -> list[dict[str, object]]:
    current = await session.page()
    return [
        {"index": index, "active": page is current, "title": await page_title(page), "url": page.url}
        for index, page in enumerate(await session.pages())
    ]


async def open_tab(session: BrowserSession, url: str) -> Page:
    """A new tab showing ``url``, made current; a tab that cannot load it is closed again."""
    previous = await session.page()
    page = await session.new_page()
    try:
        await goto(session, page, url)
    except ToolError:
        # A tab that could not open its URL is not left behind: the call changes nothing.
        session.set_current(previous)
        with contextlib.suppress(PlaywrightError):
            await page.close()
        raise
    await page.bring_to_front()
    session.set_current(page)
    return page


async def new_tab(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await open_tab(session, check_url(args["url"]))
    index = (await session.pages()).index(page)
    return text_result(f"Opened new tab [{index}] with URL: {page.url}")


async def tab_list(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    tabs = await tab_entries(session)
    current = next(tab for tab in tabs if tab["active"])
    lines = [f"[{tab['index']}] Title: {tab['title']} (URL: {tab['url']})" for tab in tabs]
    text = f"Current Tab: [{current['index']}] {current['title']}\nAll Tabs: \n" + "\n".join(lines)
    return text_result(text, structured={"tabList": tabs})


async def tab_at(session: BrowserSession, index: int) -> Page:
    pages = await session.pages()
    if not 0 <= index < len(pages):
        raise ToolError(
            f"Invalid tab index: {index} (there {'is' if len(pages) == 1 else 'are'} "
            f"{len(pages)} tab{'' if len(pages) == 1 else 's'}, numbered from 0)"
        )
    return pages[index]


async def activate_tab(session: BrowserSession, index: int) -> Page:
    page = await tab_at(session, index)
    await page.bring_to_front()
    session.set_current(page)
    return page


async def switch_tab(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    index = int(args["index"])
    page = await activate_tab(session, index)
    return text_result(f"Switched to tab [{index}] {await page_title(page)} ({page.url})")


async def close_page(session: BrowserSession, page: Page) -> Page:
    """Close ``page``; the last remaining tab becomes current (a blank one when none is left)."""
    if len(await session.pages()) == 1:
        # Keep one tab open, so the browser always has a page to act on.
        await session.new_page()
    await page.close()
    current = (await session.pages())[-1]
    session.set_current(current)
    await current.bring_to_front()
    return current


async def close_tab(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await session.page()
    index = (await session.pages()).index(page)
    current = await close_page(session, page)
    remaining = await session.pages()
    return text_result(f"Closed tab [{index}]; current tab is now [{len(remaining) - 1}] ({current.url})")


TOOLS = [
    BrowserTool(
        "browser_new_tab",
        "Open a new tab, load a URL in it and make it the current tab.",
        schema({"url": {"type": "string", "description": "URL to open in the new tab"}}, required=["url"]),
        new_tab,
    ),
    BrowserTool(
        "browser_tab_list",
        "List the open tabs (index, title, URL) and tell which one is current.",
        schema(),
        tab_list,
        output_schema=TAB_LIST_OUTPUT,
    ),
    BrowserTool(
        "browser_switch_tab",
        "Make the tab with this index (from browser_tab_list) the current tab.",
        schema({"index": {"type": "integer", "description": "Tab index to switch to"}}, required=["index"]),
        switch_tab,
    ),
    BrowserTool(
        "browser_close_tab",
        "Close the current tab; the last remaining tab becomes current (a blank one is opened if none is left).",
        schema(),
        close_tab,
    ),
]
