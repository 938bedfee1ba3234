"""The page-level browser_* tools, published in mcp-server-browser's ``tools/list`` order."""

from __future__ import annotations

from . import content, interaction, navigation, screenshot, tabs
from .base import BrowserTool

#: mcp-server-browser 1.2.29's order (its browser_get_download_list and browser_close are not offered).
ORDER = (
    "browser_navigate",
    "browser_go_back",
    "browser_go_forward",
    "browser_form_input_fill",
    "browser_get_markdown",
    "browser_get_text",
    "browser_read_links",
    "browser_new_tab",
    "browser_tab_list",
    "browser_switch_tab",
    "browser_close_tab",
    "browser_evaluate",
    "browser_screenshot",
    "browser_click",
    "browser_select",
    "browser_hover",
    "browser_get_clickable_elements",
    "browser_scroll",
    "browser_press_key",
)


def browser_tools() -> list[BrowserTool]:
    by_name = {
        tool.name: tool for module in (navigation, content, interaction, tabs, screenshot) for tool in module.TOOLS
    }
    assert set(by_name) == set(ORDER), sorted(set(by_name) ^ set(ORDER))
    return [by_name[name] for name in ORDER]
