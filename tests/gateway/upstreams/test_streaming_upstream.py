"""Long calls to aggregated upstream tools: the upstream's progress reaches the gateway's client,
and a client cancelling (closing its stream, or ``notifications/cancelled``) stops the upstream's
work, on the streamed path and on the JSON hot path — with a real SDK upstream answering in SSE
behind a real gateway."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.doors.mcp.test_streaming_mcp import ERAS, Progress
from tests.gateway.planes.shell.test_shell_plane import eventually
from tests.gateway.upstreams.test_aggregation_fakes import _mounted
from tests.support import shared_http
from tests.support.jsonrpc import rpc
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


class Upstream:
    """An SDK upstream whose ``steps`` tool reports progress between pauses and whose ``wait`` tool
    runs until cancelled (and says so)."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        mcp = MCPServer("long-upstream")

        @mcp.tool(description="Three steps, a progress report after each.")
        async def up_steps(ctx: Context) -> str:
            for step in (1, 2, 3):
                await ctx.report_progress(step, 3, f"step {step}")
                await asyncio.sleep(0.5)
            return "all steps done"

        @mcp.tool(description="Wait until cancelled.")
        async def up_wait() -> str:
            self.started += 1
            try:
                await asyncio.sleep(100)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return "never"

        self.app = _mounted(mcp, mcp.streamable_http_app(json_response=False, stateless_http=True))


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def aggregating_gateway(upstream: Upstream, gateway_settings: GatewaySettings, tmp_path: Path) -> Iterator[str]:
    with serve_app(upstream.app) as upstream_url:
        settings = replace(gateway_settings, mcp_servers={"up": {"url": f"{upstream_url}/mcp"}})
        with serve_app(build_app(settings)) as url:
            yield f"{url}/mcp"


@pytest.mark.parametrize("mode", ERAS)
async def test_upstream_progress_reaches_the_client(aggregating_gateway: str, mode: str) -> None:
    progress = Progress()
    async with Client(aggregating_gateway, mode=mode) as client:
        result = await client.call_tool("up_steps", {}, progress_callback=progress)
    finished = time.monotonic() - progress.started
    assert result.content[0].text == "all steps done"
    assert [(value, message) for _, value, message in progress.events] == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
    assert progress.events[0][0] < finished - 0.8


@pytest.mark.parametrize("mode", ERAS)
async def test_cancelling_stops_the_upstream_call(aggregating_gateway: str, upstream: Upstream, mode: str) -> None:
    async with Client(aggregating_gateway, mode=mode) as client:
        with anyio.move_on_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool("up_wait", {}, progress_callback=Progress()))
                assert await eventually(lambda: upstream.started == 1, 10)
                tg.cancel_scope.cancel()
        assert await eventually(lambda: upstream.cancelled == 1, 5)
        again = await client.call_tool("up_steps", {})
    assert again.content[0].text == "all steps done"


def test_notifications_cancelled_stops_a_forwarded_call(aggregating_gateway: str, upstream: Upstream) -> None:
    """The JSON hot path (no progress token, the forwarder): the cancel names the request id."""
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        call = pool.submit(rpc, aggregating_gateway, "tools/call", {"name": "up_wait", "arguments": {}}, id=93)
        deadline = time.monotonic() + 10
        while upstream.started == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        cancel = shared_http.post(
            aggregating_gateway,
            json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 93}},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=10,
        )
        assert cancel.status_code == 202
        answer = call.result(timeout=20)
    assert time.monotonic() - started < 10
    assert answer.json()["result"] == {
        "content": [{"type": "text", "text": "cancelled by the client"}],
        "isError": True,
    }
    deadline = time.monotonic() + 5
    while upstream.cancelled == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert upstream.cancelled == 1
