"""Reading the current page: browser_get_text, browser_get_markdown, browser_read_links, and
browser_evaluate for anything else a script can compute."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from mcp import types
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from ..session import BrowserSession, first_line
from .base import Arguments, BrowserTool, ToolError, read_current, read_page, schema, text_result

#: The rendered page as HTML without what a reader never sees: scripts, styles, hidden elements.
#: Hidden-ness needs layout, so it is read on the live DOM and applied to a deep clone (same order).
_VISIBLE_HTML_SCRIPT = """
() => {
  const DROP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT',
                        'EMBED', 'LINK', 'META', 'HEAD']);
  const root = document.body || document.documentElement;
  if (!root) return {title: document.title, html: ''};
  const clone = root.cloneNode(true);
  const live = root.querySelectorAll('*');
  const copies = clone.querySelectorAll('*');
  const hidden = [];
  for (let i = 0; i < live.length; i++) {
    const element = live[i];
    if (DROP.has(element.tagName.toUpperCase()) ||
        (element.checkVisibility && element.tagName !== 'OPTION' && element.tagName !== 'BR' &&
         !element.checkVisibility({visibilityProperty: true}))) {
      hidden.push(copies[i]);
    }
  }
  for (const element of hidden) element.remove();
  return {title: document.title, html: clone.innerHTML};
}
"""

_LINKS_SCRIPT = """
() => Array.from(document.querySelectorAll('a[href]'))
  .map((a) => ({text: (a.innerText || '').trim(), href: a.href || a.getAttribute('href') || ''}))
  .filter((link) => link.href)
"""

_BLANK_RUNS = re.compile(r"\n{3,}")

LINKS_OUTPUT = {
    "type": "object",
    "properties": {
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "href": {"type": "string"}},
                "required": ["text", "href"],
            },
        }
    },
    "required": ["links"],
}


async def get_text(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    return text_result(await read_current(session, page_text))


def to_markdown(title: str, html: str) -> str:
    from markdownify import markdownify  # here: it loads BeautifulSoup (~3 MiB) in every browser program

    body = markdownify(html, heading_style="ATX", bullets="-", escape_underscores=False)
    body = _BLANK_RUNS.sub("\n\n", body).strip()
    return f"{title}\n{body}" if title else body


async def page_markdown(page: Page) -> str:
    """The page's visible content as Markdown, title first."""
    visible = await read_page(page, _VISIBLE_HTML_SCRIPT)
    # BeautifulSoup parsing is CPU work: keep it off the event loop so other calls stay fast.
    return await asyncio.to_thread(to_markdown, visible["title"], visible["html"])


async def page_text(page: Page) -> str:
    text: str = await read_page(page, "() => (document.body || document.documentElement)?.innerText ?? ''")
    return text


async def get_markdown(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    return text_result(await read_current(session, page_markdown))


async def read_links(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    links = await read_current(session, lambda page: read_page(page, _LINKS_SCRIPT))
    return text_result(json.dumps(links, indent=2, ensure_ascii=False), structured={"links": links})


def _render(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


async def evaluate(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await session.page()
    seconds = session.nav_timeout_ms / 1000
    try:
        async with asyncio.timeout(seconds):
            result = await page.evaluate(args["script"])
    except TimeoutError:
        raise ToolError(f"Script execution failed: the script did not finish within {seconds:g} s") from None
    except PlaywrightError as exc:
        if not session.connected:
            raise
        raise ToolError(f"Script execution failed: {first_line(exc)}") from None
    return text_result(f"Execution result:\n{_render(result)}\n")


TOOLS = [
    BrowserTool(
        "browser_get_markdown",
        "Get the visible content of the current page as Markdown (title first).",
        schema(),
        get_markdown,
    ),
    BrowserTool(
        "browser_get_text",
        "Get the text content of the current page (what a reader sees, as document.body.innerText).",
        schema(),
        get_text,
    ),
    BrowserTool(
        "browser_read_links",
        "Get all links on the current page as a JSON list of {text, href} (absolute URLs).",
        schema(),
        read_links,
        output_schema=LINKS_OUTPUT,
    ),
    BrowserTool(
        "browser_evaluate",
        "Execute JavaScript in the current page and return its result as JSON. The script is an expression "
        "(e.g. `document.title`) or a function (e.g. `() => window.scrollY`); promises are awaited.",
        schema({"script": {"type": "string", "description": "JavaScript code to execute"}}, required=["script"]),
        evaluate,
    ),
]
