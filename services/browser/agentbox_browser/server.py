"""The browser program's HTTP face: a stateless MCP server (official SDK, low-level ``Server`` with
explicit schemas) at ``POST /mcp``, the page plane's loopback door ``POST /page/{operation}`` (for the
gateway's REST routes) and ``GET /health``. Chromium's supervisor and the Playwright
connection live in the app's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from mcp.server import Server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentbox_common.mcp_progress import RunningCalls
from agentbox_common.mcp_tools import ToolRegistry, build_server

from . import __version__
from .chromium import ChromiumSupervisor
from .page.door import page_routes
from .session import BrowserSession
from .settings import BrowserSettings
from .tools import browser_tools
from .tools.base import bind

INSTRUCTIONS = (
    "A Chromium browser shared by every client: browser_navigate opens a page in the current tab and lists "
    "its clickable elements by index; act on them with browser_click, browser_form_input_fill, "
    "browser_select, browser_hover; read pages with browser_get_markdown, browser_get_text, "
    "browser_read_links."
)


def build_mcp_server(registry: ToolRegistry) -> Server:
    return build_server(
        "agentbox-browser",
        registry,
        version=__version__,
        title="Web Browser",
        instructions=INSTRUCTIONS,
        running=RunningCalls(),  # notifications/cancelled stops a long navigation
    )


def build_app(settings: BrowserSettings) -> Starlette:
    supervisor = ChromiumSupervisor(settings)
    session = BrowserSession(supervisor, settings)
    # A backstop only: navigations and scripts have their own AGENTBOX_NAV_TIMEOUT bound.
    deadline = 2 * settings.nav_timeout + 10
    registry = ToolRegistry(bind(browser_tools(), session, deadline))
    mcp_server = build_mcp_server(registry)
    # Bound to loopback, the SDK turns its DNS-rebinding protection (Host/Origin allowlists) on by itself.
    mcp_app = mcp_server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True, host=settings.host
    )

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "chromium": "running" if supervisor.ready else "down"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The Playwright driver starts while Chromium does: neither needs the other to begin.
        driver = asyncio.create_task(session.start(), name="playwright-driver")
        try:
            await supervisor.start()
            await driver
            async with mcp_server.session_manager.run():
                yield
        finally:
            driver.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await driver
            await session.aclose()
            await supervisor.stop()

    routes = [Route("/health", health, methods=["GET"]), *page_routes(session, deadline), *mcp_app.routes]
    return Starlette(routes=routes, lifespan=lifespan)
