"""What every browser tool shares: its spec (:class:`BrowserTool`, a tool spec whose handler takes
the browser session), the object schemas mcp-server-browser publishes, result shapes, and
:func:`bind`, where page failures become :class:`ToolError` (Chromium being down is a plane error
the registry answers alike) so that no failing page operation can
take the server or the browser down (the shared registry turns them into ``isError`` results)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from mcp import types
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agentbox_common.mcp_tools import Arguments, Handler, ToolError, ToolSpec, text_result

from ..session import BrowserSession, first_line

__all__ = [
    "Arguments",
    "BrowserTool",
    "ToolError",
    "bind",
    "image_result",
    "read_current",
    "read_page",
    "schema",
    "text_result",
]

BrowserHandler = Callable[[BrowserSession, Arguments], Awaitable[types.CallToolResult]]
BrowserTool = ToolSpec[BrowserHandler]


def schema(properties: Mapping[str, Any] | None = None, required: Iterable[str] = ()) -> dict[str, Any]:
    """An object schema in the shape mcp-server-browser publishes (draft-07, no extra properties)."""
    result: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties or {}),
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }
    if required:
        result["required"] = list(required)
    return result


#: How long a read keeps following a page that replaces its document (one that reloads itself
#: forever is answered with the error after that).
READ_PATIENCE_S = 5.0
#: What Playwright says when a navigation took the document away from under a script.
_NAVIGATED_AWAY = ("Execution context was destroyed", "Cannot find context with specified id")
#: What Playwright says of a page closed under a call (by an outside CDP client, say).
_CLOSED = "Target page, context or browser has been closed"
#: How long a read waits to hear that its page was closed (CDP tells it asynchronously).
CLOSE_HEARD_S = 2.0
T = TypeVar("T")


async def read_current(session: BrowserSession, read: Callable[[Page], Awaitable[T]]) -> T:
    """``read`` of the current page. A tab closed by an outside client just before (the program hears
    of it a moment later) is not an error for a read: it reads the tab that is current once the
    close is known, as a person would. Only reads come here: doing an action again elsewhere would not
    be the same action."""
    page = await session.page()
    try:
        return await read(page)
    except PlaywrightError as exc:
        if not first_line(exc).startswith(_CLOSED) or not session.connected:
            raise
    if not page.is_closed():
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await page.wait_for_event("close", timeout=CLOSE_HEARD_S * 1000)
    if not page.is_closed():
        raise PlaywrightError(f"{_CLOSED} (and the page is still listed)")
    return await read(await session.page())


async def read_page(page: Page, script: str, arg: Any = None) -> Any:
    """``page.evaluate`` for a script that only reads. When a navigation replaces the document
    mid-read (the page's own reload or redirect, a tab still loading), read the new document, as a
    person would, instead of answering "Execution context was destroyed"."""
    give_up = time.monotonic() + READ_PATIENCE_S
    while True:
        try:
            return await page.evaluate(script, arg)
        except PlaywrightError as exc:
            left = give_up - time.monotonic()
            if not first_line(exc).startswith(_NAVIGATED_AWAY) or left <= 0:
                raise
            with contextlib.suppress(PlaywrightError):
                await page.wait_for_load_state("domcontentloaded", timeout=left * 1000)


def image_result(text: str, png: bytes) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=text),
            types.ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"),
        ]
    )


def bind(tools: Iterable[BrowserTool], session: BrowserSession, deadline: float) -> list[ToolSpec[Handler]]:
    """The tools as the registry runs them: on ``session``, within ``deadline`` seconds."""
    return [
        ToolSpec(tool.name, tool.description, tool.input_schema, _guarded(tool, session, deadline), tool.output_schema)
        for tool in tools
    ]


def _guarded(tool: BrowserTool, session: BrowserSession, deadline: float) -> Handler:
    async def handler(args: Arguments) -> types.CallToolResult:
        try:
            async with asyncio.timeout(deadline):
                return await tool.handler(session, args)
        except PlaywrightError as exc:
            if not session.connected:
                raise ToolError(f"browser unavailable: {first_line(exc)}") from None
            raise ToolError(f"{tool.name} failed: {first_line(exc)}") from None
        except TimeoutError:
            raise ToolError(f"{tool.name} did not finish within {deadline:g} s") from None

    return handler
