"""The conformance suite's task fixtures (``slow_compute``, ``failing_job``, ``protocol_error_job``) as
an upstream MCP server of the gateway, so the suite's tasks scenarios drive the gateway's own tasks:
the gateway aggregates the fixtures under their own names (an entry without a prefix publishes the
tools whose names start with ``<entry>_``) and makes a task of any aggregated call still running after
its window. ``greet`` cannot be published so (its name has no ``_``): scenarios that call it stay in
the baseline."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
from mcp import types
from mcp.server import MCPServer
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

#: ``EXTRA_MCP_SERVERS`` entries, each publishing the fixture whose name starts with ``<entry>_``.
ENTRIES = ("slow", "failing", "protocol")


def fixtures_app() -> Starlette:
    mcp = MCPServer("conformance-fixtures")

    @mcp.tool(description="Sleeps `seconds`, then answers.")
    async def slow_compute(seconds: float = 0, label: str = "") -> str:
        await anyio.sleep(seconds)
        return f"computed {label} after {seconds}s"

    @mcp.tool(description="Fails as a tool after about a second.")
    async def failing_job() -> types.CallToolResult:
        await anyio.sleep(1)
        return types.CallToolResult(content=[types.TextContent(type="text", text="the job failed")], is_error=True)

    @mcp.tool(description="Fails with a JSON-RPC error after about a second.")
    async def protocol_error_job() -> str:
        await anyio.sleep(1)
        raise MCPError(types.INTERNAL_ERROR, "the job crashed")

    inner = mcp.streamable_http_app(json_response=True, stateless_http=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    return Starlette(routes=inner.routes, lifespan=lifespan)


def upstreams(url: str) -> dict[str, dict[str, str]]:
    """``EXTRA_MCP_SERVERS`` publishing the fixtures of the server at ``url`` under their own names."""
    return {entry: {"url": url} for entry in ENTRIES}
