"""A tiny MCP Apps host for view tests: a page on a loopback port of its own that renders a ``ui://``
view the way a host does (a sandboxed ``srcdoc`` frame under the CSP the view's ``_meta.ui.csp`` asks
for, the ``ui/initialize`` answer, then the tool's result), and the official client's part (the
view's HTML and metadata, the tool's result)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
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

from tests.support.requirements import require_chromium
from tests.support.servers import serve_app

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


@contextlib.contextmanager
def host_server() -> Iterator[str]:
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


def mount(page: Page, html: str, ui: dict[str, Any], result: dict[str, Any]) -> Frame:
    """Render the view on the host page (as :func:`open_view` read it): its frame."""
    page.evaluate("([html, ui, result]) => mountView(html, ui, result)", [html, ui, result])
    return view_frame(page)
