"""The three built-in browser tools over the gateway's real ``/mcp``, against a real Chromium:
info with the caller's public address, display screenshots as image content, GUI actions that
reach the page, and clear isError answers for bad actions."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.headless_chromium import Chromium, shown_page
from tests.support.jsonrpc import call_tool, rpc, tool_json, tool_text
from tests.support.png import decode_png

pytestmark = pytest.mark.chromium
BROWSER_TOOLS = ["browser_get_info", "browser_gui_screenshot", "browser_gui_execute_action"]


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings, chromium: Chromium) -> GatewaySettings:
    return replace(gateway_settings, cdp_url=chromium.cdp_url)


def test_browser_tools_are_listed_with_their_schemas(mcp_url: str) -> None:
    tools = {tool["name"]: tool for tool in rpc(mcp_url, "tools/list").json()["result"]["tools"]}
    names = [name for name in tools if name in BROWSER_TOOLS]
    assert names == BROWSER_TOOLS
    for name in BROWSER_TOOLS:
        assert tools[name]["description"]
        assert tools[name]["inputSchema"]["type"] == "object"
    action = tools["browser_gui_execute_action"]["inputSchema"]
    assert action["required"] == ["action"]
    assert set(action["properties"]["action"]["properties"]["action_type"]["enum"]) >= {
        "MOVE_TO",
        "CLICK",
        "DOUBLE_CLICK",
        "RIGHT_CLICK",
        "MOUSE_DOWN",
        "MOUSE_UP",
        "DRAG_TO",
        "SCROLL",
        "TYPING",
        "PRESS",
        "KEY_DOWN",
        "KEY_UP",
        "HOTKEY",
        "WAIT",
        "MOVE_REL",
        "DRAG_REL",
    }


def test_get_info_builds_cdp_url_from_the_callers_address(mcp_url: str, gateway: str, chromium: Chromium) -> None:
    version = shared_http.get(f"{chromium.cdp_url}/json/version").json()
    browser_id = version["webSocketDebuggerUrl"].rsplit("/", 1)[1]
    direct = tool_json(call_tool(mcp_url, "browser_get_info"))
    assert direct["cdp_url"] == f"ws://{gateway.removeprefix('http://')}/cdp/devtools/browser/{browser_id}"
    assert direct["vnc_url"] is None
    assert direct["viewport"]["width"] > 0 and direct["viewport"]["height"] > 0
    assert "Chrome" in direct["user_agent"]
    proxied = tool_json(
        call_tool(
            mcp_url,
            "browser_get_info",
            headers={
                "X-Forwarded-Proto": "https",
                "X-Forwarded-Host": "sandbox.example.com",
                "X-Forwarded-Prefix": "/box/7/",
            },
        )
    )
    assert proxied["cdp_url"] == f"wss://sandbox.example.com/box/7/cdp/devtools/browser/{browser_id}"


def test_screenshot_is_png_image_content_of_the_display(mcp_url: str, chromium: Chromium, pages_url: str) -> None:
    with shown_page(chromium.cdp_url, f"{pages_url}/color/rgb(0,128,0)"):
        viewport = tool_json(call_tool(mcp_url, "browser_get_info"))["viewport"]
        result = call_tool(mcp_url, "browser_gui_screenshot")
    assert not result.get("isError")
    image = next(block for block in result["content"] if block["type"] == "image")
    assert image["mimeType"] == "image/png"
    png = decode_png(base64.b64decode(image["data"]), rows=6)
    assert (png.width, png.height) == (viewport["width"], viewport["height"])
    assert png.pixel(5, 5)[:3] == (0, 128, 0)
    caption = next(block["text"] for block in result["content"] if block["type"] == "text")
    assert f"{png.width}x{png.height}" in caption


def test_actions_click_and_type_into_the_page(mcp_url: str, chromium: Chromium, pages_url: str) -> None:
    with shown_page(chromium.cdp_url, f"{pages_url}/form") as page:
        click = {"action": {"action_type": "CLICK", "x": 140, "y": 70}}
        clicked = tool_json(call_tool(mcp_url, "browser_gui_execute_action", click))
        assert clicked == {"status": "success", "action_performed": "Clicked the left button at (140, 70)"}
        assert page.title() == "clicked 1"
        for action in (
            {"action_type": "CLICK", "x": 190, "y": 160, "button": None},
            {"action_type": "TYPING", "text": "agent was here"},
            {"action_type": "PRESS", "key": "Enter"},
        ):
            result = call_tool(mcp_url, "browser_gui_execute_action", {"action": action})
            assert tool_json(result)["status"] == "success"
        assert page.input_value("#name") == "agent was here"
        log = page.evaluate("window.log")
        assert "Enter" in [entry["key"] for entry in log if entry["type"] == "keydown"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "action is required"),
        ({"action": {"action_type": "WAIT", "duration": 30}}, "action.duration"),
        ({"action": {"action_type": "FLY"}}, "action.action_type must be one of"),
        ({"action": {"action_type": "MOVE_TO", "x": 3}}, "Invalid action: y is required for MOVE_TO"),
        ({"action": {"action_type": "PRESS", "key": "ctrl+nope"}}, "Invalid action: unknown key: 'nope'"),
    ],
)
def test_invalid_actions_are_error_results(mcp_url: str, arguments: dict, message: str) -> None:
    result = call_tool(mcp_url, "browser_gui_execute_action", arguments)
    assert result["isError"] is True
    assert message in tool_text(result)
