"""Without Chromium the browser tools answer isError (as the seed says: no reachable CDP port, no
computer-use worker), and they work again by themselves once Chromium is (re)started: no gateway
restart needed. REST and the CDP proxy answer 503 meanwhile."""

from __future__ import annotations

from dataclasses import replace

import pytest
from agent_sandbox import Sandbox
from agent_sandbox.browser.types.action import Action_Click
from agent_sandbox.core.api_error import ApiError

from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.headless_chromium import headless_chromium
from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.requirements import require_chromium
from tests.support.servers import free_port

pytestmark = pytest.mark.chromium
ACTION = {"action": {"action_type": "MOVE_TO", "x": 10, "y": 10}}


@pytest.fixture
def cdp_port() -> int:
    return free_port()


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings, cdp_port: int) -> GatewaySettings:
    return replace(gateway_settings, cdp_url=f"http://127.0.0.1:{cdp_port}")


def expect_down(mcp_url: str) -> None:
    info = call_tool(mcp_url, "browser_get_info")
    assert info["isError"] is True
    assert tool_text(info).startswith("No reachable CDP port: ")
    for name, args in (("browser_gui_screenshot", {}), ("browser_gui_execute_action", ACTION)):
        result = call_tool(mcp_url, name, args)
        assert result["isError"] is True
        assert tool_text(result).startswith("No computer-use worker: ")


def expect_up(mcp_url: str) -> None:
    assert "/cdp/devtools/browser/" in tool_json(call_tool(mcp_url, "browser_get_info"))["cdp_url"]
    assert call_tool(mcp_url, "browser_gui_screenshot")["content"][0]["type"] == "image"
    assert tool_json(call_tool(mcp_url, "browser_gui_execute_action", ACTION))["status"] == "success"


def test_tools_fail_without_chromium_and_recover_when_it_starts(mcp_url: str, cdp_port: int) -> None:
    require_chromium()
    expect_down(mcp_url)
    with headless_chromium(cdp_port):
        expect_up(mcp_url)
    expect_down(mcp_url)
    with headless_chromium(cdp_port):  # a restarted Chromium is picked up again
        expect_up(mcp_url)


def test_rest_and_cdp_proxy_answer_503_without_chromium(gateway: str) -> None:
    sdk = Sandbox(base_url=gateway)
    for call in (
        sdk.browser.get_info,
        lambda: b"".join(sdk.browser.screenshot()),
        lambda: sdk.browser.execute_action(request=Action_Click(x=1, y=1)),
    ):
        with pytest.raises(ApiError) as failed:
            call()
        assert failed.value.status_code == 503
        assert failed.value.body["message"] == "Browser unavailable: no reachable CDP port"
    proxied = shared_http.get(f"{gateway}/cdp/json/version")
    assert proxied.status_code == 503 and proxied.json()["success"] is False
