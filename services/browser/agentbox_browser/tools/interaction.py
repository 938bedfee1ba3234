"""Acting on the current page: the indexed elements and browser_click, browser_form_input_fill,
browser_select, browser_hover, browser_press_key, browser_scroll."""

from __future__ import annotations

from mcp import types
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..session import BrowserSession
from .base import Arguments, BrowserTool, ToolError, schema, text_result
from .elements import index_elements, listing, locate, target_name
from .navigation import settle

#: How long an element may stay hidden, covered or disabled before an action gives up (milliseconds).
ACTION_TIMEOUT_MS = 5_000

_SCROLL_SCRIPT = """
(amount) => {
  const page = document.scrollingElement || document.documentElement;
  const before = window.scrollY;
  if (amount === null) window.scrollTo({top: page.scrollHeight, behavior: 'instant'});
  else window.scrollBy({top: amount, behavior: 'instant'});
  const after = window.scrollY;
  return {scrolled: Math.round(after - before),
          atBottom: Math.abs(page.scrollHeight - after - window.innerHeight) <= 1};
}
"""

#: Typing without ``clear`` adds to the existing text, so the caret goes to its end first.
_CARET_TO_END_SCRIPT = """
(element) => {
  element.focus();
  if (typeof element.setSelectionRange === 'function') {
    try { element.setSelectionRange(element.value.length, element.value.length); } catch (error) {}
  } else if (element.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(element);
    range.collapse(false);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
  }
}
"""

INDEX = {"type": "integer", "description": "Index of the element, from browser_get_clickable_elements"}
SELECTOR = {"type": "string", "description": "CSS selector of the element (used when index is not given)"}


async def get_clickable_elements(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await session.page()
    return text_result(listing(await index_elements(page)))


async def click(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    index = args.get("index")
    if index is None:
        raise ToolError("index is required: call browser_get_clickable_elements to number the page's elements")
    page = await session.page()
    element = await locate(page, index=index)

    async def act() -> None:
        try:
            await element.click(timeout=ACTION_TIMEOUT_MS, no_wait_after=True)
        except PlaywrightTimeoutError:
            # Covered or never "stable" (animations): click it the way a script would, as agent-infra does.
            await element.evaluate("element => element.click()")

    await settle(session, page, act)
    return text_result(f"Clicked element: {int(index)}")


async def form_input_fill(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    index, selector, value, clear = (
        args.get("index"),
        args.get("selector"),
        args["value"],
        args.get("clear", False),
    )
    page = await session.page()
    element = await locate(page, index=index, selector=selector)
    target = target_name(index, selector)
    try:
        if clear:
            await element.fill(value, timeout=ACTION_TIMEOUT_MS)
        else:
            if not await element.is_editable(timeout=ACTION_TIMEOUT_MS):
                raise ToolError(f"Failed to fill {target}: the element is read-only or disabled")
            await element.evaluate(_CARET_TO_END_SCRIPT)
            await page.keyboard.type(value)
    except PlaywrightTimeoutError:
        raise ToolError(f"Failed to fill {target}: the element is not visible or not editable") from None
    suffix = " (cleared existing text)" if clear else ""
    return text_result(f'Successfully filled {target} with: "{value}"{suffix}')


async def select(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    index, selector, value = args.get("index"), args.get("selector"), args["value"]
    page = await session.page()
    element = await locate(page, index=index, selector=selector)
    target = target_name(index, selector)
    try:
        await settle(session, page, lambda: element.select_option(value, timeout=ACTION_TIMEOUT_MS))
    except PlaywrightTimeoutError:
        raise ToolError(f"Failed to select {target}: no option with value or label {value!r}") from None
    return text_result(f"Selected {target} with: {value}")


async def hover(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    index, selector = args.get("index"), args.get("selector")
    page = await session.page()
    element = await locate(page, index=index, selector=selector)
    target = target_name(index, selector)
    try:
        await element.hover(timeout=ACTION_TIMEOUT_MS)
    except PlaywrightTimeoutError:
        raise ToolError(f"Failed to hover {target}: the element is not visible") from None
    return text_result(f"Hovered {target}")


async def press_key(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    key = args["key"]
    page = await session.page()
    await settle(session, page, lambda: page.keyboard.press(key))
    return text_result(f"Pressed key: {key}")


async def scroll(session: BrowserSession, args: Arguments) -> types.CallToolResult:
    page = await session.page()
    outcome = await page.evaluate(_SCROLL_SCRIPT, args.get("amount"))
    bottom = "Reached the bottom of the page." if outcome["atBottom"] else "Did not reach the bottom of the page."
    return text_result(f"Scrolled {outcome['scrolled']} pixels. {bottom}")


TOOLS = [
    BrowserTool(
        "browser_form_input_fill",
        "Fill out an input field, identified by index (from browser_get_clickable_elements) or CSS selector. "
        "Text is typed after the existing value unless clear is true.",
        schema(
            {
                "selector": SELECTOR,
                "index": INDEX,
                "value": {"type": "string", "description": "Value to fill"},
                "clear": {
                    "type": "boolean",
                    "default": False,
                    "description": "Whether to clear existing text before filling",
                },
            },
            required=["value"],
        ),
        form_input_fill,
    ),
    BrowserTool(
        "browser_click",
        "Click an element on the page by its index (from browser_get_clickable_elements); waits for a "
        "navigation it starts.",
        schema({"index": INDEX}),
        click,
    ),
    BrowserTool(
        "browser_select",
        "Select an option (by value or label) in a <select> element identified by index or CSS selector.",
        schema(
            {
                "index": INDEX,
                "selector": SELECTOR,
                "value": {"type": "string", "description": "Value or label of the option to select"},
            },
            required=["value"],
        ),
        select,
    ),
    BrowserTool(
        "browser_hover",
        "Hover the mouse over an element identified by index or CSS selector.",
        schema({"index": INDEX, "selector": SELECTOR}),
        hover,
    ),
    BrowserTool(
        "browser_get_clickable_elements",
        "Number the clickable, hoverable or fillable elements of the current page and list them as "
        "`[index]<tag>text</tag>` lines; the indexes are valid until the page changes.",
        schema(),
        get_clickable_elements,
    ),
    BrowserTool(
        "browser_scroll",
        "Scroll the page vertically.",
        schema(
            {
                "amount": {
                    "type": "number",
                    "description": "Pixels to scroll (positive for down, negative for up); "
                    "if not provided, scroll to the bottom of the page",
                }
            }
        ),
        scroll,
    ),
    BrowserTool(
        "browser_press_key",
        "Press a key on the keyboard in the current page, e.g. Enter, Tab, Escape, Backspace, ArrowDown, "
        "PageDown, F5, a single character, or a combination such as Control+A; waits for a navigation "
        "it starts.",
        schema(
            {
                "key": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Name of the key to press or a character to generate",
                }
            },
            required=["key"],
        ),
        press_key,
    ),
]
