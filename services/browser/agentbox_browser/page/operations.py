"""Page operations by name: each takes the session and its (already validated) arguments and returns
JSON-ready data, or raises a :class:`PageError` of its kind (or a tool error the door reads as one). They act on
the current tab through the helpers the MCP tools use (``goto``, ``settle``, ``locate``, tabs)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..session import BrowserSession
from ..tools.base import ToolError, read_page
from ..tools.content import page_markdown, page_text
from ..tools.elements import index_elements, locate
from ..tools.interaction import ACTION_TIMEOUT_MS
from ..tools.navigation import check_url, goto, has_entry, load, settle
from ..tools.tabs import activate_tab, close_page, open_tab, page_title, tab_at, tab_entries
from . import context_ops, recording
from .errors import ConditionTimedOut, PageConflict, PageError, PageNotFound

Operation = Callable[[BrowserSession, dict[str, Any]], Awaitable[Any]]

_LINE = re.compile(r"^\[(\d+)\]<(\w+)")

_FIND_TEXT_SCRIPT = """
(keyword) => {
  const found = [];
  const needle = keyword.toLowerCase();
  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node && found.length < 100; node = walker.nextNode()) {
    const text = node.textContent || '';
    let at = text.toLowerCase().indexOf(needle);
    const parent = node.parentElement;
    if (at < 0 || !parent || (parent.checkVisibility && !parent.checkVisibility())) continue;
    while (at >= 0 && found.length < 100) {
      found.push({text: text.substr(at, keyword.length), tag: parent.tagName.toLowerCase(),
                  context: text.slice(Math.max(0, at - 40), at + keyword.length + 40).trim()});
      at = text.toLowerCase().indexOf(needle, at + needle.length);
    }
  }
  return found;
}
"""

_SCROLL_BY = {"down": (0, 1), "up": (0, -1), "right": (1, 0), "left": (-1, 0)}


async def _where(page: Page) -> dict[str, Any]:
    return {"url": page.url, "title": await page_title(page)}


async def navigate(session: BrowserSession, args: dict[str, Any]) -> Any:
    url = check_url(args["url"])
    page = await session.page()
    wait_until: Any = args.get("wait_until") or "load"  # one of Playwright's, the input schema's enum
    if wait_until == "load" and args.get("timeout") is None:
        response = await goto(session, page, url)
    else:
        timeout_ms = args["timeout"] * 1000 if args.get("timeout") is not None else session.nav_timeout_ms
        try:
            response = await load(page, url, wait_until, timeout_ms)
        except PlaywrightTimeoutError:
            raise ConditionTimedOut(f"navigation to {url} did not reach {wait_until!r} in time") from None
    return {**await _where(page), "status": response.status if response is not None else None}


async def _history(session: BrowserSession, step: int) -> Any:
    page = await session.page()
    if not await has_entry(page, step):
        raise PageConflict(f"there is no {'previous' if step < 0 else 'next'} page in this tab's history")
    move = page.go_back if step < 0 else page.go_forward
    await move(wait_until="load", timeout=session.nav_timeout_ms)
    return await _where(page)


async def back(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await _history(session, -1)


async def forward(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await _history(session, 1)


async def reload(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    await page.reload(wait_until="load", timeout=session.nav_timeout_ms)
    return await _where(page)


async def click(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    button: Any = args.get("button") or "left"  # left, middle or right: the input schema's enum
    count = args.get("click_count") or 1
    if args.get("selector") is None and args.get("index") is None:
        if args.get("x") is None or args.get("y") is None:
            raise PageError("give a selector, an index, or both x and y")
        x, y = args["x"], args["y"]
        await settle(session, page, lambda: page.mouse.click(x, y, button=button, click_count=count))
        return {"clicked": {"x": x, "y": y}, **await _where(page)}
    element = await locate(page, index=args.get("index"), selector=args.get("selector"))
    await settle(
        session,
        page,
        lambda: element.click(button=button, click_count=count, timeout=ACTION_TIMEOUT_MS, no_wait_after=True),
    )
    return {"clicked": args.get("selector") or args.get("index"), **await _where(page)}


async def fill(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    element = await locate(page, index=args.get("index"), selector=args.get("selector"))
    await element.fill(args["text"], timeout=ACTION_TIMEOUT_MS)
    return {"value": await element.input_value(timeout=ACTION_TIMEOUT_MS)}


async def type_text(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    await page.keyboard.type(args["text"], delay=args.get("delay") or 0)
    return {"typed": len(args["text"])}


async def press_key(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    await settle(session, page, lambda: page.keyboard.press(args["key"]))
    return {"key": args["key"]}


async def hot_key(session: BrowserSession, args: dict[str, Any]) -> Any:
    combination = "+".join(args["keys"])
    page = await session.page()
    await settle(session, page, lambda: page.keyboard.press(combination))
    return {"keys": combination}


async def hover(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    if args.get("selector"):
        element = await locate(page, selector=args["selector"])
        await element.hover(timeout=ACTION_TIMEOUT_MS)
        return {"hovered": args["selector"]}
    if args.get("x") is None or args.get("y") is None:
        raise PageError("give a selector or both x and y")
    await page.mouse.move(args["x"], args["y"])
    return {"hovered": {"x": args["x"], "y": args["y"]}}


async def select_option(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    element = await locate(page, selector=args["selector"])
    choice = {key: args[key] for key in ("value", "label", "index") if args.get(key) is not None}
    if not choice:
        raise PageError("give the option's value, label or index")
    try:
        selected = await settle(session, page, lambda: element.select_option(**choice, timeout=ACTION_TIMEOUT_MS))
    except PlaywrightTimeoutError:
        raise PageNotFound(f"{args['selector']} has no option {choice}") from None
    return {"selected": selected}


async def _set_checked(session: BrowserSession, args: dict[str, Any], checked: bool) -> Any:
    page = await session.page()
    element = await locate(page, selector=args["selector"])
    await element.set_checked(checked, timeout=ACTION_TIMEOUT_MS)
    return {"checked": await element.is_checked()}


async def check(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await _set_checked(session, args, True)


async def uncheck(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await _set_checked(session, args, False)


async def upload_file(session: BrowserSession, args: dict[str, Any]) -> Any:
    files = [Path(name) for name in args["files"]]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise PageNotFound(f"no such file: {', '.join(missing)}")
    page = await session.page()
    element = await locate(page, selector=args["selector"])
    await element.set_input_files(files, timeout=ACTION_TIMEOUT_MS)
    return {"files": [str(path) for path in files]}


async def fill_form(session: BrowserSession, args: dict[str, Any]) -> Any:
    """Each item ``{selector, value}``: a checkbox/radio takes a bool, a <select> an option, else text."""
    page = await session.page()
    items = args["items"]
    bad = [i for i, item in enumerate(items) if not isinstance(item.get("selector"), str) or "value" not in item]
    if bad:
        raise PageError(f"items {bad} need a string selector and a value")
    elements = [await locate(page, selector=item["selector"]) for item in items]
    filled = []
    for item, element in zip(items, elements, strict=True):
        value = item["value"]
        kind = await element.evaluate("e => e.tagName === 'SELECT' ? 'select' : (e.type || '').toLowerCase()")
        if kind in ("checkbox", "radio"):
            await element.set_checked(bool(value), timeout=ACTION_TIMEOUT_MS)
        elif kind == "select":
            await element.select_option(str(value), timeout=ACTION_TIMEOUT_MS)
        else:
            await element.fill(str(value), timeout=ACTION_TIMEOUT_MS)
        filled.append(item["selector"])
    return {"filled": filled}


async def _scroll_position(page: Page) -> dict[str, int]:
    x, y = await page.evaluate("[Math.round(scrollX), Math.round(scrollY)]")
    return {"scroll_x": x, "scroll_y": y}


async def scroll(session: BrowserSession, args: dict[str, Any]) -> Any:
    direction = args.get("direction") or "down"
    if direction not in _SCROLL_BY:
        raise PageError(f"direction must be one of {', '.join(_SCROLL_BY)}")
    page = await session.page()
    amount = args["amount"] if args.get("amount") is not None else await page.evaluate("innerHeight")
    dx, dy = _SCROLL_BY[direction]
    await page.evaluate(
        "([x, y]) => window.scrollBy({left: x, top: y, behavior: 'instant'})", [dx * amount, dy * amount]
    )
    return await _scroll_position(page)


async def scroll_to(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    await page.evaluate(
        "([x, y]) => window.scrollTo({left: x, top: y, behavior: 'instant'})", [args.get("x") or 0, args.get("y") or 0]
    )
    return await _scroll_position(page)


async def scroll_to_element(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    element = await locate(page, selector=args["selector"])
    await element.scroll_into_view_if_needed(timeout=ACTION_TIMEOUT_MS)
    return await _scroll_position(page)


async def screenshot(session: BrowserSession, args: dict[str, Any]) -> Any:
    image_format = args.get("format") or "png"
    if image_format not in ("png", "jpeg"):
        raise PageError("format must be png or jpeg")
    options: dict[str, Any] = {"full_page": bool(args.get("full_page")), "type": image_format}
    if image_format == "jpeg" and args.get("quality") is not None:
        options["quality"] = args["quality"]
    page = await session.page()
    image = await page.screenshot(timeout=session.nav_timeout_ms, **options)
    return {"mime_type": f"image/{image_format}", "data": base64.b64encode(image).decode("ascii")}


async def html(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    if args.get("outer", True):
        return await page.content()
    return await read_page(page, "() => (document.body || document.documentElement).innerHTML")


async def text(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await page_text(await session.page())


async def markdown(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    return {"markdown": await page_markdown(page), **await _where(page)}


async def elements(session: BrowserSession, args: dict[str, Any]) -> Any:
    """The indexed interactive elements (the indexes ``click``/``fill`` take)."""
    lines = await index_elements(await session.page())
    found = []
    for line in lines:
        match = _LINE.match(line)
        if match:
            found.append({"index": int(match[1]), "tag": match[2], "description": line})
    return found


async def console(session: BrowserSession, args: dict[str, Any]) -> Any:
    messages = list(session.console)
    if args.get("clear"):
        session.console.clear()
    return messages


async def export_console(session: BrowserSession, args: dict[str, Any]) -> Any:
    target = Path(args["save_path"])
    if not target.parent.is_dir():
        raise PageNotFound(f"no such directory: {target.parent}")
    messages = list(session.console)
    await asyncio.to_thread(target.write_text, json.dumps(messages, indent=2, ensure_ascii=False))
    if args.get("clear"):
        session.console.clear()
    return {"path": str(target), "count": len(messages)}


async def evaluate(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await session.page()
    try:
        result = await page.evaluate(args["expression"])
    except PlaywrightError as exc:
        if not session.connected:
            raise
        raise PageError(f"script failed: {str(exc).splitlines()[0]}") from None
    return {"result": result}


async def find_text(session: BrowserSession, args: dict[str, Any]) -> Any:
    if not args["keyword"]:
        raise PageError("keyword must not be empty")
    return await read_page(await session.page(), _FIND_TEXT_SCRIPT, args["keyword"])


async def wait(session: BrowserSession, args: dict[str, Any]) -> Any:
    """Wait for one condition on the current page; 408 when it does not happen in ``timeout``."""
    page = await session.page()
    kind = args["type"]
    timeout_ms = (args["timeout"] if args.get("timeout") is not None else session.nav_timeout_ms / 1000) * 1000
    started = time.monotonic()
    needed = {"selector": "selector", "url": "url", "function": "expression"}
    if kind in needed and not args.get(needed[kind]):
        raise PageError(f"wait type {kind!r} needs {needed[kind]}")
    try:
        if kind == "selector":
            await page.locator(args["selector"]).first.wait_for(
                state=args.get("state") or "visible", timeout=timeout_ms
            )
        elif kind == "load":
            await page.wait_for_load_state(args.get("state") or "load", timeout=timeout_ms)
        elif kind == "network_idle":
            await page.wait_for_load_state("networkidle", timeout=timeout_ms)
        elif kind == "url":
            await page.wait_for_url(args["url"], timeout=timeout_ms)
        elif kind == "function":
            polling: float | Literal["raf"] = args["polling"] * 1000 if args.get("polling") else "raf"
            await page.wait_for_function(args["expression"], polling=polling, timeout=timeout_ms)
        elif kind in ("response", "request"):
            pattern = args.get("url_pattern") or args.get("url")
            if not pattern:
                raise PageError(f"wait type {kind!r} needs url_pattern")
            waiter = page.wait_for_event(
                kind, lambda item: re.search(pattern, item.url) is not None, timeout=timeout_ms
            )
            await waiter
        elif kind == "download":
            if not args.get("save_path"):
                raise PageError("wait type 'download' needs save_path")
            download = await page.wait_for_event("download", timeout=timeout_ms)
            await download.save_as(args["save_path"])
        elif kind == "timeout":
            await page.wait_for_timeout(timeout_ms)
        else:
            raise PageError(f"unknown wait type {kind!r}")
    except PlaywrightTimeoutError:
        raise ConditionTimedOut(f"wait for {kind} did not succeed within {timeout_ms / 1000:g} s") from None
    return {"type": kind, "elapsed": round(time.monotonic() - started, 3), **await _where(page)}


async def tabs_list(session: BrowserSession, args: dict[str, Any]) -> Any:
    return await tab_entries(session)


async def tabs_create(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await open_tab(session, check_url(args.get("url") or "about:blank"))
    return {"index": (await session.pages()).index(page), **await _where(page)}


async def tabs_activate(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await activate_tab(session, args["index"])
    return {"index": args["index"], **await _where(page)}


async def tabs_close(session: BrowserSession, args: dict[str, Any]) -> Any:
    page = await tab_at(session, args["index"])
    current = await close_page(session, page)
    return {"closed": args["index"], "current": (await session.pages()).index(current)}


async def cookies_get(session: BrowserSession, args: dict[str, Any]) -> Any:
    urls = [url.strip() for url in (args.get("urls") or "").split(",") if url.strip()]
    return await (await session.context()).cookies(urls or None)


async def cookies_set(session: BrowserSession, args: dict[str, Any]) -> Any:
    cookies = args["cookies"]
    for position, cookie in enumerate(cookies):
        if not isinstance(cookie.get("name"), str) or "value" not in cookie:
            raise PageError(f"cookie {position} needs a name and a value")
        if not cookie.get("url") and not (cookie.get("domain") and cookie.get("path")):
            raise PageError(f"cookie {position} needs a url, or a domain and a path")
    try:
        await (await session.context()).add_cookies(cookies)
    except PlaywrightError as exc:
        if not session.connected:
            raise
        raise PageError(f"cookies refused: {str(exc).splitlines()[0]}") from None
    return {"set": len(cookies)}


async def cookies_clear(session: BrowserSession, args: dict[str, Any]) -> Any:
    await (await session.context()).clear_cookies()
    return {"cleared": True}


OPERATIONS: dict[str, Operation] = {
    "navigate": navigate,
    "back": back,
    "forward": forward,
    "reload": reload,
    "click": click,
    "fill": fill,
    "type": type_text,
    "press_key": press_key,
    "hot_key": hot_key,
    "hover": hover,
    "select_option": select_option,
    "check": check,
    "uncheck": uncheck,
    "upload_file": upload_file,
    "fill_form": fill_form,
    "scroll": scroll,
    "scroll_to": scroll_to,
    "scroll_to_element": scroll_to_element,
    "screenshot": screenshot,
    "html": html,
    "text": text,
    "markdown": markdown,
    "elements": elements,
    "console": console,
    "console_export": export_console,
    "evaluate": evaluate,
    "find_text": find_text,
    "wait": wait,
    "tabs_list": tabs_list,
    "tabs_create": tabs_create,
    "tabs_activate": tabs_activate,
    "tabs_close": tabs_close,
    "cookies_get": cookies_get,
    "cookies_set": cookies_set,
    "cookies_clear": cookies_clear,
    **context_ops.OPERATIONS,
    **recording.OPERATIONS,
}

__all__ = ["OPERATIONS", "Operation", "PageError", "ToolError"]
