"""The MCP App views rendered the way a host renders them, in a real Chromium: the ``ui://`` HTML
read through the official client, put in a sandboxed ``srcdoc`` frame of a host page on another
loopback port under the CSP its ``_meta.ui.csp`` asks for, told the tool's result after the
``ui/initialize`` handshake. The live view's canvas then shows the page the browser is on, and the
terminal runs a command, with a key and without, every request of the view going to the gateway."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError

from agentbox_gateway.app import build_app
from agentbox_gateway.doors.mcp.apps import LIVE_VIEW_URI, PREVIEW_URI, TERMINAL_URI
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.doors.web.test_live_view import tab
from tests.support.display import Display, live_view_settings
from tests.support.mcp_app_host import host_page, host_server, mount, open_view, wait_for
from tests.support.servers import free_port, run_command, serve_app

pytestmark = pytest.mark.chromium
KEY = "app-views-key-0b5e"


@pytest.fixture(params=["keyed", "open"])
def gateway_and_key(
    request: pytest.FixtureRequest, gateway_settings: GatewaySettings, display: Display
) -> Iterator[tuple[str, str]]:
    key = KEY if request.param == "keyed" else ""
    settings = live_view_settings(gateway_settings, display, key)
    with serve_app(build_app(settings)) as url:
        yield url, key


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    with host_server() as url:
        yield url


def test_the_live_view_renders_in_a_hosts_sandboxed_frame(
    gateway_and_key: tuple[str, str], host: str, display: Display, pages_url: str
) -> None:
    gateway, key = gateway_and_key
    with tab(display.cdp_url, f"{pages_url}/color/rgb(0,200,80)"):
        html, ui, result = open_view(gateway, key, LIVE_VIEW_URI, "browser_get_info")
        with host_page(host, gateway) as (page, requests):
            frame = mount(page, html, ui, result)

            def centre() -> list[int]:
                return frame.evaluate("""() => {
                    const canvas = document.querySelector('#screen canvas');
                    if (!canvas || !canvas.width) return [];
                    const ctx = canvas.getContext('2d');
                    return Array.from(ctx.getImageData(canvas.width / 2, canvas.height / 2, 1, 1).data);
                }""")

            wait_for(lambda: centre()[:3] == [0, 200, 80], f"the canvas shows the page ({centre()})")
            assert frame.evaluate("document.getElementById('state').textContent") == "live"
            log = page.evaluate("window.hostLog")
            assert log[:2] == ["ui/initialize", "ui/notifications/initialized"]
            view = [url for url in requests if not url.startswith((host, "about:", "data:"))]
            assert view and all(url.startswith((gateway, gateway.replace("http", "ws", 1))) for url in view)
            assert any(url.endswith("/vnc/websockify") for url in view)
            assert not key or all(key not in url for url in requests)


def test_the_terminal_renders_in_a_hosts_sandboxed_frame(gateway_and_key: tuple[str, str], host: str) -> None:
    gateway, key = gateway_and_key
    html, ui, result = open_view(gateway, key, TERMINAL_URI, "sandbox_open_terminal")
    assert json.loads(result["content"][0]["text"])["terminal_url"].startswith(f"{gateway}/terminal/")
    with host_page(host, gateway) as (page, requests):
        frame = mount(page, html, ui, result)
        state = "document.getElementById('terminal-state').textContent"
        wait_for(lambda: frame.evaluate(state) == "connected", "the terminal connects")
        frame.locator("#terminal textarea").press_sequentially("echo $((6 * 7))xyz\n")
        screen = "document.querySelector('#terminal .xterm-rows').textContent"
        wait_for(lambda: "42xyz" in frame.evaluate(screen), "the shell answers")
        assert not key or all(key not in url for url in requests)


@pytest.fixture
def listening_app(tmp_path: Path) -> Iterator[int]:
    """An app the agent started: a static site of its own process, with a page and a script."""
    page = '<!doctype html><p id="hello">hello from the app</p><script src="app.js"></script>'
    (tmp_path / "index.html").write_text(page)
    (tmp_path / "app.js").write_text('document.getElementById("hello").dataset.ran = "yes";')
    port = free_port()
    args = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)]
    with run_command(args, ready_url=f"http://127.0.0.1:{port}/"):
        yield port


def test_a_preview_renders_in_a_hosts_sandboxed_frame(
    gateway_and_key: tuple[str, str], host: str, listening_app: int
) -> None:
    gateway, key = gateway_and_key
    html, ui, result = open_view(gateway, key, PREVIEW_URI, "sandbox_get_context")
    ports = [preview["port"] for preview in result["_meta"]["agentbox/view"]["previews"]]
    assert listening_app in ports
    with host_page(host, gateway) as (page, requests):
        frame = mount(page, html, ui, result)
        if len(ports) > 1:
            wait_for(lambda: frame.evaluate("document.getElementById('ports').options.length") == len(ports), "ports")
            frame.select_option("#ports", index=ports.index(listening_app))
        app = frame.query_selector("#app")
        assert app is not None

        def ran() -> bool:
            inner = app.content_frame()
            script = "(document.getElementById('hello') || {dataset: {}}).dataset.ran === 'yes'"
            if inner is None or not inner.url.endswith(f"/proxy/{listening_app}/"):
                return False
            try:
                return bool(inner.evaluate(script))
            except PlaywrightError:  # the frame is still navigating (to this port's page): look again
                return False

        wait_for(ran, "the app's page and script load in the view")
        view = [url for url in requests if not url.startswith((host, "about:", "data:"))]
        assert view and all(url.startswith(gateway) for url in view)
        assert not key or all(key not in url for url in requests)
