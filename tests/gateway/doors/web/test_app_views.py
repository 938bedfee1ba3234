"""The MCP App views rendered the way a host renders them, in a real Chromium: the ``ui://`` HTML
read through the official client, put in a sandboxed ``srcdoc`` frame of a host page on another
loopback port under the CSP its ``_meta.ui.csp`` asks for, told the tool's result after the
``ui/initialize`` handshake. The live view's canvas then shows the page the browser is on, and the
terminal runs a command, with a key and without, every request of the view going to the gateway."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.types import TextResourceContents
from playwright.sync_api import Frame, Page, Route, sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route as HttpRoute

from agentbox_gateway.app import build_app
from agentbox_gateway.doors.mcp.apps import LIVE_VIEW_URI, PREVIEW_URI, TERMINAL_URI
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.doors.web.test_live_view import NOVNC, tab
from tests.support.display import Display, display_stack
from tests.support.requirements import missing, require_chromium
from tests.support.servers import free_port, run_command, serve_app

pytestmark = pytest.mark.chromium
KEY = "app-views-key-0b5e"

#: A host page as small as the ext-apps spec allows: the view in a sandboxed frame under the CSP its
#: metadata asks for (the spec's restrictive default plus the declared domains), the ui/initialize
#: answer, then the tool's result.
HOST_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>host</title></head><body>
<iframe id="view" sandbox="allow-scripts" style="width: 900px; height: 560px"></iframe>
<script>
window.hostLog = [];
function csp(ui) {
  const c = (ui && ui.csp) || {};
  const res = (c.resourceDomains || []).join(" "), con = (c.connectDomains || []).join(" ");
  return [
    "default-src 'none'", `script-src 'self' 'unsafe-inline' ${res}`, `style-src 'self' 'unsafe-inline' ${res}`,
    `img-src 'self' data: ${res}`, `font-src 'self' ${res}`, `media-src 'self' data: ${res}`,
    `connect-src ${con || "'none'"}`, `frame-src ${(c.frameDomains || []).join(" ") || "'none'"}`,
    "object-src 'none'", "base-uri 'self'",
  ].join("; ");
}
window.mountView = (html, ui, result) => {
  const frame = document.getElementById("view");
  const send = (message) => frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow) return;
    const message = event.data;
    window.hostLog.push(message.method || "response");
    if (message.method === "ui/initialize") {
      send({ id: message.id, result: { protocolVersion: message.params.protocolVersion,
        hostInfo: { name: "test-host", version: "1" }, hostCapabilities: {},
        hostContext: { theme: "light", displayMode: "inline" } } });
    } else if (message.method === "ui/notifications/initialized") {
      send({ method: "ui/notifications/tool-result", params: result });
    }
  });
  const policy = `<meta http-equiv="Content-Security-Policy" content="${csp(ui)}">`;
  frame.srcdoc = html.replace("<head>", `<head>${policy}`);
};
</script></body></html>"""


@pytest.fixture(scope="module")
def display() -> Iterator[Display]:
    if not (NOVNC / "vnc.html").exists():
        missing("Debian's novnc is not installed (apt-get install novnc)")
    with display_stack() as stack:
        yield stack


@pytest.fixture(params=["keyed", "open"])
def gateway_and_key(
    request: pytest.FixtureRequest, gateway_settings: GatewaySettings, display: Display
) -> Iterator[tuple[str, str]]:
    key = KEY if request.param == "keyed" else ""
    settings = replace(
        gateway_settings,
        api_key=key,
        cdp_url=display.cdp_url,
        vnc_enabled=True,
        display=display.name,
        vnc_address=f"127.0.0.1:{display.vnc_port}",
        novnc_dir=NOVNC,
    )
    with serve_app(build_app(settings)) as url:
        yield url, key


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    """The host page, on a loopback port of its own (another origin than the gateway's)."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(HOST_PAGE)

    with serve_app(Starlette(routes=[HttpRoute("/", page)])) as url:
        yield url


def open_view(gateway: str, key: str, uri: str, tool: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """What an Apps host does with the official client: the view's HTML and ``_meta.ui``, and the
    tool's result (as JSON, the way the host posts it to the view)."""

    async def read() -> tuple[str, dict[str, Any], dict[str, Any]]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        apps = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(f"{gateway}/mcp", http_client=http), extensions=[apps]) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert (tools[tool].meta or {})["ui"]["resourceUri"] == uri
                [content] = (await client.read_resource(uri)).contents
                assert isinstance(content, TextResourceContents) and content.mime_type == APP_MIME_TYPE
                result = await client.call_tool(tool, {})
                assert not result.is_error
        return (
            content.text,
            (content.meta or {})["ui"],
            result.model_dump(mode="json", by_alias=True, exclude_none=True),
        )

    return anyio.run(read)


@contextlib.contextmanager
def host_page(host: str, gateway: str) -> Iterator[tuple[Page, list[str]]]:
    """The host page in a fresh Chromium, every request recorded; none may leave the two origins."""
    requests: list[str] = []

    def gate(route: Route) -> None:
        allowed = route.request.url.startswith((host, gateway, "about:", "data:"))
        route.continue_() if allowed else route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=["--no-sandbox"])
        try:
            context = browser.new_context()
            context.on("request", lambda request: requests.append(request.url))
            context.route("**/*", gate)
            page = context.new_page()
            page.on("websocket", lambda socket: requests.append(socket.url))
            page.goto(host)
            yield page, requests
        finally:
            browser.close()


def view_frame(page: Page) -> Frame:
    frame = page.query_selector("#view")
    assert frame is not None
    content = frame.content_frame()
    assert content is not None
    return content


def wait_for(check: Any, what: str, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    value = check()
    while not value and time.monotonic() < deadline:
        time.sleep(0.2)
        value = check()
    assert value, what
    return value


def test_the_live_view_renders_in_a_hosts_sandboxed_frame(
    gateway_and_key: tuple[str, str], host: str, display: Display, pages_url: str
) -> None:
    gateway, key = gateway_and_key
    with tab(display.cdp_url, f"{pages_url}/color/rgb(0,200,80)"):
        html, ui, result = open_view(gateway, key, LIVE_VIEW_URI, "browser_get_info")
        with host_page(host, gateway) as (page, requests):
            page.evaluate("([html, ui, result]) => mountView(html, ui, result)", [html, ui, result])
            frame = view_frame(page)

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
        page.evaluate("([html, ui, result]) => mountView(html, ui, result)", [html, ui, result])
        frame = view_frame(page)
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
        page.evaluate("([html, ui, result]) => mountView(html, ui, result)", [html, ui, result])
        frame = view_frame(page)
        if len(ports) > 1:
            wait_for(lambda: frame.evaluate("document.getElementById('ports').options.length") == len(ports), "ports")
            frame.select_option("#ports", index=ports.index(listening_app))
        app = frame.query_selector("#app")
        assert app is not None

        def ran() -> bool:
            inner = app.content_frame()
            script = "(document.getElementById('hello') || {dataset: {}}).dataset.ran === 'yes'"
            return inner is not None and inner.url.endswith(f"/proxy/{listening_app}/") and inner.evaluate(script)

        wait_for(ran, "the app's page and script load in the view")
        view = [url for url in requests if not url.startswith((host, "about:", "data:"))]
        assert view and all(url.startswith(gateway) for url in view)
        assert not key or all(key not in url for url in requests)
