"""The browser program's page-level tools against real Chromium, over real HTTP (raw JSON-RPC the way
the seed's curl commands talk, and the official MCP SDK client)."""

from __future__ import annotations

import base64
import json
import re

import httpx
import pytest
from mcp import Client
from playwright.sync_api import sync_playwright

from agentbox_browser.tools import ORDER
from tests.browser.conftest import VIEWPORT, BrowserProgram, png_size
from tests.support.jsonrpc import list_tool_names, rpc
from tests.support.png import decode_png
from tests.support.polling import until
from tests.support.schemas import strictness_problems
from tests.support.servers import free_port

pytestmark = pytest.mark.chromium


def index_of(listing: str, text: str) -> int:
    """The index of the first ``[i]<tag ...>…text…</tag>`` line that mentions ``text``."""
    for line in listing.splitlines():
        match = re.match(r"\[(\d+)\]<", line)
        if match and text in line:
            return int(match.group(1))
    raise AssertionError(f"{text!r} not in:\n{listing}")


def test_tools_are_listed_with_the_public_names_in_order(browser: BrowserProgram) -> None:
    assert list_tool_names(browser.mcp_url) == list(ORDER)
    tools = rpc(browser.mcp_url, "tools/list").json()["result"]["tools"]
    for tool in tools:
        assert tool["description"], tool["name"]
        assert tool["inputSchema"]["type"] == "object"
        assert tool["inputSchema"]["additionalProperties"] is False
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["browser_navigate"]["inputSchema"]["required"] == ["url"]
    assert set(by_name["browser_screenshot"]["inputSchema"]["properties"]) == {
        "name",
        "selector",
        "index",
        "width",
        "height",
        "fullPage",
        "highlight",
    }
    assert set(by_name["browser_form_input_fill"]["inputSchema"]["properties"]) == {
        "selector",
        "index",
        "value",
        "clear",
    }


def test_input_schemas_are_closed_and_have_no_nullable_types(browser: BrowserProgram) -> None:
    tools = rpc(browser.mcp_url, "tools/list").json()["result"]["tools"]
    assert [p for tool in tools for p in strictness_problems(tool["name"], tool["inputSchema"])] == []


def test_health_reports_chromium(browser: BrowserProgram) -> None:
    assert browser.health() == {"status": "ok", "chromium": "running"}


def test_navigate_lists_the_visible_clickable_elements(browser: BrowserProgram, site: str) -> None:
    text = browser.ok("browser_navigate", {"url": f"{site}/"})
    assert text.startswith(f"Navigated to {site}/\n")
    assert re.search(r'^\[\d+\]<a href="/form">Search form</a>$', text, re.M), text
    assert re.search(r"^\[\d+\]<button>Count</button>$", text, re.M), text
    assert "Invisible button" not in text


def test_get_text_and_markdown_show_what_a_reader_sees(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    text = browser.ok("browser_get_text")
    assert "Welcome home" in text and "This is the home page." in text
    assert "secret hidden text" not in text
    markdown = browser.ok("browser_get_markdown")
    assert markdown.startswith("Home\n")
    assert "# Welcome home" in markdown
    assert "This is the **home** page." in markdown
    assert "- first item" in markdown
    assert "[Search form](/form)" in markdown
    assert "secret hidden text" not in markdown and "ignoredScript" not in markdown


def test_read_links_gives_text_and_absolute_hrefs(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    result = browser.call("browser_read_links")
    links = result["structuredContent"]["links"]
    assert {"text": "Search form", "href": f"{site}/form"} in links
    assert json.loads(result["content"][0]["text"]) == links


def test_click_an_indexed_element(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    listing = browser.ok("browser_get_clickable_elements")
    counter = index_of(listing, "Count")
    assert browser.ok("browser_click", {"index": counter}) == f"Clicked element: {counter}"
    assert browser.ok("browser_evaluate", {"script": "window.clicks"}) == "Execution result:\n1\n"
    # A click that follows a link waits for the new page.
    browser.ok("browser_click", {"index": index_of(listing, "Search form")})
    assert "Search form" in browser.ok("browser_get_text")
    assert browser.ok("browser_evaluate", {"script": "location.pathname"}) == 'Execution result:\n"/form"\n'


def test_fill_select_and_submit_a_form(browser: BrowserProgram, site: str) -> None:
    listing = browser.ok("browser_navigate", {"url": f"{site}/form"})
    query = index_of(listing, 'placeholder="Query"')
    assert browser.ok("browser_form_input_fill", {"index": query, "value": "hello"}) == (
        f'Successfully filled index {query} with: "hello"'
    )
    browser.ok("browser_form_input_fill", {"selector": "#prefilled", "value": "new", "clear": True})
    assert browser.ok("browser_select", {"selector": "#color", "value": "green"}) == (
        "Selected selector #color with: green"
    )
    browser.ok("browser_click", {"index": index_of(listing, "Search</button>")})
    assert "q=hello color=green prefilled=new" in browser.ok("browser_get_text")


def test_fill_without_clear_types_after_the_existing_text(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/form"})
    browser.ok("browser_form_input_fill", {"selector": "#prefilled", "value": "er"})
    value = browser.ok("browser_evaluate", {"script": "document.querySelector('#prefilled').value"})
    assert value == 'Execution result:\n"older"\n'


def test_enter_submits_the_focused_form(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/form"})
    browser.ok("browser_form_input_fill", {"selector": "#q", "value": "typed"})
    assert browser.ok("browser_press_key", {"key": "Enter"}) == "Pressed key: Enter"
    assert "q=typed color=red" in browser.ok("browser_get_text")


def test_hover(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    assert browser.ok("browser_hover", {"selector": "#hover-target"}) == "Hovered selector #hover-target"
    assert browser.ok("browser_evaluate", {"script": "document.title"}) == 'Execution result:\n"hovered"\n'


def test_scroll_by_an_amount_and_to_the_bottom(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/long"})
    assert browser.ok("browser_scroll", {"amount": 500}) == (
        "Scrolled 500 pixels. Did not reach the bottom of the page."
    )
    assert browser.ok("browser_evaluate", {"script": "window.scrollY"}) == "Execution result:\n500\n"
    assert browser.ok("browser_scroll").endswith("Reached the bottom of the page.")
    bottom = json.loads(
        browser.ok(
            "browser_evaluate",
            {"script": "() => [window.scrollY + innerHeight, document.scrollingElement.scrollHeight]"},
        ).split("\n", 1)[1]
    )
    assert bottom[0] == bottom[1]
    browser.ok("browser_scroll", {"amount": -100})
    assert (
        browser.ok("browser_evaluate", {"script": "window.scrollY"})
        == f"Execution result:\n{bottom[1] - VIEWPORT[1] - 100}\n"
    )


def test_evaluate_expressions_functions_and_promises(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    assert browser.ok("browser_evaluate", {"script": "1 + 2"}) == "Execution result:\n3\n"
    text = browser.ok("browser_evaluate", {"script": "() => ({title: document.title, n: [1, 2]})"})
    assert json.loads(text.split("\n", 1)[1]) == {"title": "Home", "n": [1, 2]}
    text = browser.ok("browser_evaluate", {"script": "new Promise(r => setTimeout(() => r('later'), 50))"})
    assert text == 'Execution result:\n"later"\n'


def test_go_back_and_forward(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    browser.ok("browser_navigate", {"url": f"{site}/form"})
    assert browser.ok("browser_go_back") == f"Navigated back to {site}/"
    assert browser.ok("browser_go_forward") == f"Navigated forward to {site}/form"
    assert "no next page" in browser.error("browser_go_forward")


def test_tabs_new_list_switch_close(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    listed = browser.call("browser_tab_list")["structuredContent"]["tabList"]
    first = len(listed) - 1
    assert listed[first]["active"] and listed[first]["url"] == f"{site}/"

    assert (
        browser.ok("browser_new_tab", {"url": f"{site}/form"}) == f"Opened new tab [{first + 1}] with URL: {site}/form"
    )
    result = browser.call("browser_tab_list")
    tabs = result["structuredContent"]["tabList"]
    assert [tab["url"] for tab in tabs[first:]] == [f"{site}/", f"{site}/form"]
    assert [tab["active"] for tab in tabs[first:]] == [False, True]
    assert result["content"][0]["text"].startswith(f"Current Tab: [{first + 1}] Form\nAll Tabs: \n")
    assert "Search form" in browser.ok("browser_get_text")

    assert browser.ok("browser_switch_tab", {"index": first}).startswith(f"Switched to tab [{first}] Home")
    assert "Welcome home" in browser.ok("browser_get_text")
    assert "Invalid tab index: 99" in browser.error("browser_switch_tab", {"index": 99})

    browser.ok("browser_switch_tab", {"index": first + 1})
    assert browser.ok("browser_close_tab").startswith(f"Closed tab [{first + 1}]")
    tabs = browser.call("browser_tab_list")["structuredContent"]["tabList"]
    assert len(tabs) == first + 1 and tabs[-1]["active"]
    assert "Welcome home" in browser.ok("browser_get_text")


def test_a_popup_becomes_the_current_tab_once_loaded(browser: BrowserProgram, site: str) -> None:
    listing = browser.ok("browser_navigate", {"url": f"{site}/"})
    before = len(browser.call("browser_tab_list")["structuredContent"]["tabList"])
    browser.ok("browser_click", {"index": index_of(listing, "Open in a new tab")})
    assert browser.ok("browser_get_text") == "popup content"
    tabs = browser.call("browser_tab_list")["structuredContent"]["tabList"]
    assert len(tabs) == before + 1 and tabs[-1]["active"] and tabs[-1]["url"] == f"{site}/slowish"
    browser.ok("browser_close_tab")
    assert "Welcome home" in browser.ok("browser_get_text")


def test_new_tab_with_an_unreachable_url_leaves_no_tab(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/"})
    before = browser.call("browser_tab_list")["structuredContent"]["tabList"]
    message = browser.error("browser_new_tab", {"url": f"http://127.0.0.1:{free_port()}/"})
    assert "ERR_CONNECTION_REFUSED" in message
    assert browser.call("browser_tab_list")["structuredContent"]["tabList"] == before


def test_screenshot_of_the_viewport_is_a_png_of_its_size(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/long"})
    result = browser.call("browser_screenshot", {"name": "home"})
    assert not result.get("isError"), result
    text, image = result["content"]
    assert text["text"] == f"Screenshot 'home' taken at {VIEWPORT[0]}x{VIEWPORT[1]}"
    assert image["type"] == "image" and image["mimeType"] == "image/png"
    assert png_size(image["data"]) == VIEWPORT


def test_viewport_screenshots_follow_the_page_across_sites_and_tabs(browser: BrowserProgram, site: str) -> None:
    def corner(background: str | None = None) -> tuple[int, ...]:
        """The top-left pixel of a viewport screenshot, after painting the page ``background``."""
        if background:
            browser.ok("browser_evaluate", {"script": f"document.body.style.background = '{background}'"})
        result = browser.call("browser_screenshot")
        assert not result.get("isError"), result
        png = decode_png(base64.b64decode(result["content"][1]["data"]), rows=1)
        assert (png.width, png.height) == VIEWPORT
        return png.pixel(0, 0)[:3]

    browser.ok("browser_navigate", {"url": f"{site}/"})
    assert corner() == (255, 255, 255)
    assert corner("rgb(255, 0, 0)") == (255, 0, 0), "the screenshot shows the page as it is now"
    # Another site (another renderer process), then another tab: each screenshot is of the current page.
    browser.ok("browser_navigate", {"url": site.replace("127.0.0.1", "localhost") + "/"})
    assert corner() == (255, 255, 255)
    assert corner("rgb(0, 0, 255)") == (0, 0, 255)
    browser.ok("browser_new_tab", {"url": f"{site}/long"})
    assert corner("rgb(0, 255, 0)") == (0, 255, 0)
    browser.ok("browser_close_tab")
    assert corner() == (0, 0, 255)


def test_screenshot_sizes_elements_and_full_page(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/long"})
    resized = browser.call("browser_screenshot", {"width": 400, "height": 300})
    assert png_size(resized["content"][1]["data"]) == (400, 300)
    # The viewport is restored afterwards.
    assert png_size(browser.call("browser_screenshot")["content"][1]["data"]) == VIEWPORT
    full = png_size(browser.call("browser_screenshot", {"fullPage": True})["content"][1]["data"])
    assert full[0] == VIEWPORT[0] and full[1] > 5000
    element = png_size(browser.call("browser_screenshot", {"selector": "h1"})["content"][1]["data"])
    assert element[0] < VIEWPORT[0] and element[1] < 100
    highlighted = browser.call("browser_screenshot", {"highlight": True})
    assert png_size(highlighted["content"][1]["data"]) == VIEWPORT
    assert browser.ok("browser_evaluate", {"script": "document.getElementById('agentbox-highlights')"}) == (
        "Execution result:\nnull\n"
    )


def test_errors_are_tool_errors_and_the_browser_keeps_working(browser: BrowserProgram, site: str) -> None:
    refused = browser.error("browser_navigate", {"url": f"http://127.0.0.1:{free_port()}/"})
    assert refused.startswith("navigation to http://127.0.0.1:") and "ERR_CONNECTION_REFUSED" in refused
    assert "include the scheme" in browser.error("browser_navigate", {"url": "example.com"})
    assert "include the scheme" in browser.error("browser_navigate", {"url": "localhost:3000/x"})
    assert browser.error("browser_navigate", {}) == "url is required"
    assert "unexpected argument colour" in browser.error("browser_scroll", {"colour": "red"})
    assert browser.error("browser_click", {"index": "one"}) == "index must be of type integer"

    browser.ok("browser_navigate", {"url": f"{site}/"})
    assert browser.error("browser_click", {"index": 999}).startswith("no element with index 999 on the current page")
    assert "no element matches selector '#missing'" in browser.error("browser_hover", {"selector": "#missing"})
    assert "either index or selector is required" in browser.error("browser_hover")
    assert browser.ok("browser_hover", {"index": None, "selector": "#hover-target"}) == (
        "Hovered selector #hover-target"
    )
    thrown = browser.error("browser_evaluate", {"script": "(() => { throw new Error('boom') })()"})
    assert thrown.startswith("Script execution failed:") and "boom" in thrown
    assert "Unknown key" in browser.error("browser_press_key", {"key": "NoSuchKey"})

    assert "Welcome home" in browser.ok("browser_get_text")


def test_a_navigation_right_after_a_failed_one_loads(browser: BrowserProgram, site: str) -> None:
    """Chromium commits a failed navigation's error page a moment after the failure is reported; the
    next navigation must not come back "interrupted" by it."""
    for _ in range(5):
        browser.error("browser_navigate", {"url": f"http://127.0.0.1:{free_port()}/"})
        assert browser.ok("browser_navigate", {"url": f"{site}/"}).startswith(f"Navigated to {site}/")


def test_navigation_timeout_is_an_error_and_the_browser_recovers(browser: BrowserProgram, site: str) -> None:
    message = browser.error("browser_navigate", {"url": f"{site}/slow"})
    assert message == f"navigation to {site}/slow timed out after 3 s (the page may still be loading)"
    assert browser.ok("browser_navigate", {"url": f"{site}/form"}).startswith(f"Navigated to {site}/form")


def test_unknown_tool_is_a_jsonrpc_error(browser: BrowserProgram) -> None:
    response = rpc(browser.mcp_url, "tools/call", {"name": "browser_fly", "arguments": {}})
    assert response.status_code == 200
    assert response.json()["error"] == {"code": -32602, "message": "unknown tool: browser_fly"}


def test_dns_rebinding_protection_is_on(browser: BrowserProgram) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(browser.mcp_url, json=body, headers={"Host": "evil.example"}).status_code == 421
    assert httpx.post(browser.mcp_url, json=body, headers={"Origin": "http://evil.example"}).status_code == 403
    assert httpx.post(browser.mcp_url, json=body, headers={"Origin": "http://localhost:3000"}).status_code == 200


def test_outside_cdp_clients_share_the_context(browser: BrowserProgram, site: str) -> None:
    browser.ok("browser_navigate", {"url": f"{site}/form"})
    with sync_playwright() as playwright:
        outside = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{browser.cdp_port}")
        try:
            context = outside.contexts[0]
            assert f"{site}/form" in [page.url for page in context.pages]
            page = context.new_page()
            page.goto(f"{site}/long")
            # A tab opened by an outside client becomes the current one for the tools (once the
            # program hears of it: CDP's events come asynchronously).
            until(lambda: "Top" in browser.ok("browser_get_text"), 10)
            page.close()
            # Read at once: the program may not have heard of the close yet; a read then reads the
            # tab that is current once it has (it failed with "Target page ... closed" before).
            assert "Search form" in browser.ok("browser_get_text")
        finally:
            outside.close()


def test_reading_a_page_survives_its_navigations(browser: BrowserProgram, site: str) -> None:
    """A page that navigates on its own (a reload 50 ms after each load) is read, not refused with
    "Execution context was destroyed": the read waits for the new document and reads that."""
    browser.ok("browser_navigate", {"url": f"{site}/reloading"})
    try:
        for _ in range(40):
            assert "Reloading page" in browser.ok("browser_get_text")
            assert "Reloading page" in browser.ok("browser_get_markdown")
            browser.ok("browser_read_links")
    finally:  # the next navigation would be interrupted by a reload: stop them, and see a document
        # that has no reload under way (its own timer, if still to come, sees the stop)
        stop = {"script": "sessionStorage.stop = 'yes'; !window.reloading"}

        def settled() -> bool:
            result = browser.call("browser_evaluate", stop)
            return not result.get("isError") and result["content"][0]["text"] == "Execution result:\ntrue\n"

        until(settled, 10)
    browser.ok("browser_navigate", {"url": f"{site}/"})


@pytest.mark.anyio
async def test_official_sdk_client(browser: BrowserProgram, site: str) -> None:
    for mode in ("auto", "legacy"):
        async with Client(browser.mcp_url, mode=mode) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == list(ORDER)
            result = await client.call_tool("browser_navigate", {"url": f"{site}/"})
            assert not result.is_error
            assert result.content[0].text.startswith(f"Navigated to {site}/")
            links = await client.call_tool("browser_read_links")
            assert {"text": "Long page", "href": f"{site}/long"} in links.structured_content["links"]
            shot = await client.call_tool("browser_screenshot")
            assert shot.content[1].type == "image"
            assert png_size(shot.content[1].data) == VIEWPORT
            failed = await client.call_tool("browser_click", {"index": 12345})
            assert failed.is_error and "no element with index 12345" in failed.content[0].text
