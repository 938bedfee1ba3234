"""Element indexes, the way agent-infra's browser tools hand them out: every visible clickable or
input element of the current page gets a number (stamped on it as a data attribute, so it survives
until the page changes), listed as ``[index]<tag ...>text</tag>`` lines; the other tools then act on
``index`` (or on a CSS ``selector``)."""

from __future__ import annotations

from playwright.async_api import Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from agentbox_common.errors import NotFound

from .base import ToolError, read_page


class ElementNotFound(NotFound, ToolError):
    """No element has that index or matches that selector: of kind not found (the page door answers
    404), and a tool error as the MCP tools' other refusals are."""


INDEX_ATTRIBUTE = "data-agentbox-index"
#: How long a CSS selector may take to appear before "no element matches" (milliseconds).
SELECTOR_WAIT_MS = 5_000

_INDEX_SCRIPT = """
(attribute) => {
  const CANDIDATES = [
    'a[href]', 'button', 'input:not([type="hidden"])', 'select', 'textarea', 'summary', 'label[for]',
    '[role="button"]', '[role="link"]', '[role="checkbox"]', '[role="radio"]', '[role="switch"]',
    '[role="tab"]', '[role="menuitem"]', '[role="option"]', '[role="combobox"]', '[role="textbox"]',
    '[onclick]', '[contenteditable=""]', '[contenteditable="true"]', '[tabindex]:not([tabindex="-1"])',
  ].join(',');
  const SHOWN = ['type', 'name', 'placeholder', 'aria-label', 'title', 'role', 'alt', 'value', 'href'];
  const clip = (value, size) => {
    const flat = String(value).replace(/\\s+/g, ' ').trim();
    return flat.length > size ? flat.slice(0, size) + '…' : flat;
  };
  for (const element of document.querySelectorAll(`[${attribute}]`)) element.removeAttribute(attribute);
  // Read every box first, then write the attributes: interleaving them would re-layout per element.
  const visible = Array.from(document.querySelectorAll(CANDIDATES)).filter((element) => {
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 &&
      (!element.checkVisibility || element.checkVisibility({visibilityProperty: true}));
  });
  const lines = visible.map((element, index) => {
    const tag = element.tagName.toLowerCase();
    const attributes = SHOWN
      .filter((name) => element.getAttribute(name))
      .filter((name) => !(name === 'value' && element.getAttribute('type') === 'password'))
      .map((name) => ` ${name}="${clip(element.getAttribute(name), 80).replace(/"/g, '&quot;')}"`)
      .join('');
    return `[${index}]<${tag}${attributes}>${clip(element.innerText || '', 100)}</${tag}>`;
  });
  visible.forEach((element, index) => element.setAttribute(attribute, String(index)));
  return lines;
}
"""

_HIGHLIGHT_SCRIPT = """
(attribute) => {
  const layer = document.createElement('div');
  layer.id = 'agentbox-highlights';
  layer.style.cssText = 'position:absolute;left:0;top:0;width:0;height:0;pointer-events:none;' +
    'z-index:2147483647';
  const colors = ['#e6194b', '#3cb44b', '#4363d8', '#f58231', '#911eb4', '#008080'];
  for (const element of document.querySelectorAll(`[${attribute}]`)) {
    const index = Number(element.getAttribute(attribute));
    const box = element.getBoundingClientRect();
    const color = colors[index % colors.length];
    const frame = document.createElement('div');
    frame.style.cssText = `position:absolute;box-sizing:border-box;border:2px solid ${color};` +
      `left:${box.left + scrollX}px;top:${box.top + scrollY}px;width:${box.width}px;height:${box.height}px`;
    const label = document.createElement('div');
    label.textContent = String(index);
    label.style.cssText = `position:absolute;right:0;top:-2px;background:${color};color:#fff;` +
      'font:bold 11px sans-serif;padding:0 3px;border-radius:2px';
    frame.appendChild(label);
    layer.appendChild(frame);
  }
  document.documentElement.appendChild(layer);
}
"""

_UNHIGHLIGHT_SCRIPT = "() => document.getElementById('agentbox-highlights')?.remove()"


async def index_elements(page: Page) -> list[str]:
    """Number the page's visible interactive elements; returns the ``[index]<tag>text</tag>`` lines."""
    lines: list[str] = await read_page(page, _INDEX_SCRIPT, INDEX_ATTRIBUTE)
    return lines


def listing(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "No clickable elements found on the current page"


async def highlight(page: Page) -> None:
    await page.evaluate(_HIGHLIGHT_SCRIPT, INDEX_ATTRIBUTE)


async def unhighlight(page: Page) -> None:
    await page.evaluate(_UNHIGHLIGHT_SCRIPT)


async def locate(page: Page, index: int | None = None, selector: str | None = None) -> Locator:
    """The element named by ``index`` (preferred, as in agent-infra) or ``selector``; ToolError when none."""
    if index is not None:
        locator = page.locator(f'[{INDEX_ATTRIBUTE}="{int(index)}"]')
        if await locator.count() == 0:
            raise ElementNotFound(
                f"no element with index {int(index)} on the current page; "
                "call browser_get_clickable_elements to get fresh indexes"
            )
        return locator.first
    if selector:
        locator = page.locator(selector).first
        try:
            await locator.wait_for(state="attached", timeout=SELECTOR_WAIT_MS)
        except PlaywrightTimeoutError:
            raise ElementNotFound(f"no element matches selector {selector!r}") from None
        return locator
    raise ToolError("either index or selector is required")


def target_name(index: int | None, selector: str | None) -> str:
    return f"index {int(index)}" if index is not None else f"selector {selector}"
