"""A long navigation in the browser program stops when its client sends ``notifications/cancelled``
(the gateway sends one when its own client cancels an aggregated call), and the browser stays usable."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.browser.conftest import NAV_TIMEOUT, BrowserProgram
from tests.support.jsonrpc import rpc


def test_notifications_cancelled_stops_a_navigation(browser: BrowserProgram, site: str) -> None:
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        navigation = pool.submit(
            rpc,
            browser.mcp_url,
            "tools/call",
            {"name": "browser_navigate", "arguments": {"url": f"{site}/slow"}},
            id=41,
        )
        time.sleep(0.5)
        cancel = httpx.post(
            browser.mcp_url,
            json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41}},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert cancel.status_code == 202
        result = navigation.result(timeout=30).json()["result"]
        elapsed = time.monotonic() - started
    assert result["isError"] is True and result["content"][0]["text"] == "cancelled by the client"
    assert elapsed < NAV_TIMEOUT - 1  # well before the navigation's own timeout
    browser.ok("browser_navigate", {"url": f"{site}/"})
    assert "Welcome home" in browser.ok("browser_get_text", {})
