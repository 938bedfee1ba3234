"""The browser program's HTTP face: a stateless MCP server (official SDK, low-level ``Server`` with
explicit schemas) at ``POST /mcp``, the page plane's loopback door ``POST /page/{operation}`` (for the
gateway's REST routes), ``GET /health`` and ``GET /metrics``, with the access log, wired as every
program here is (``agentbox_common.service``). Chromium's supervisor and the Playwright connection
live in the app's lifespan."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable

from mcp.server import Server
from prometheus_client.core import GaugeMetricFamily, Metric
from starlette.applications import Starlette
from starlette.routing import Route

from agentbox_common import service
from agentbox_common.mcp_progress import RunningCalls
from agentbox_common.mcp_tools import ToolRegistry, build_server
from agentbox_common.mcp_tools.counting import count_call

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


def build_mcp_server(registry: ToolRegistry[None]) -> Server:
    return build_server(
        "agentbox-browser",
        registry,
        version=__version__,
        title="Web Browser",
        instructions=INSTRUCTIONS,
        running=RunningCalls(),  # notifications/cancelled stops a long navigation
        on_call=count_call,
    )


def build_app(settings: BrowserSettings) -> Starlette:
    supervisor = ChromiumSupervisor(settings)
    session = BrowserSession(supervisor, settings)
    # A backstop only: navigations and scripts have their own AGENTBOX_NAV_TIMEOUT bound.
    deadline = 2 * settings.nav_timeout + 10
    registry: ToolRegistry[None] = ToolRegistry(bind(browser_tools(), session, deadline))
    mcp_server = build_mcp_server(registry)
    # Bound to loopback, the SDK turns its DNS-rebinding protection (Host/Origin allowlists) on by itself.
    mcp_app = mcp_server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True, host=settings.host
    )
    (mcp_route,) = mcp_app.routes
    assert isinstance(mcp_route, Route)

    @contextlib.asynccontextmanager
    async def running_browser() -> AsyncIterator[None]:
        # The Playwright driver starts while Chromium does: neither needs the other to begin.
        driver = asyncio.create_task(session.start(), name="playwright-driver")
        try:
            await supervisor.start()
            await driver
            yield
        finally:
            driver.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await driver
            await session.aclose()
            await supervisor.stop()

    app = Starlette(
        routes=[*page_routes(session, deadline), Route(mcp_route.path, service.mcp_endpoint(mcp_route.endpoint))]
    )
    return service.as_service(
        app,
        "agentbox-browser",
        settings.observability,
        health=lambda: {"status": "ok", "chromium": "running" if supervisor.ready else "down"},
        parts=[running_browser, mcp_server.session_manager.run],
        collectors=[browser_collector(supervisor, session)],
    )


def browser_collector(supervisor: ChromiumSupervisor, session: BrowserSession) -> Callable[[], Iterable[Metric]]:
    """The browser program's gauges for ``/metrics``, read at scrape time."""

    def collect() -> Iterable[Metric]:
        yield GaugeMetricFamily(
            "agentbox_chromium_up",
            "1 while Chromium's DevTools endpoint answers.",
            value=1.0 if supervisor.ready else 0.0,
        )
        yield GaugeMetricFamily(
            "agentbox_browser_connected",
            "1 while Playwright is connected to Chromium over CDP.",
            value=1.0 if session.connected else 0.0,
        )

    return collect
