"""Lists that say when they change: a client listening (``subscriptions/listen``, the official
Python client at 2026-07-28) hears one ``notifications/tools/list_changed`` when an upstream starts
and one when it is killed, and one when a skill is registered or deleted (``sandbox_load_skill``
names the installed skills); the handshake era's GET stream carries the same notification."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.subscriptions import ToolsListChanged

from tests.gateway.upstreams.test_aggregation_fakes import upstream_process

pytestmark = pytest.mark.anyio


async def skill_description(client: Client) -> str:
    tools = (await client.list_tools()).tools
    return next(tool.description or "" for tool in tools if tool.name == "sandbox_load_skill")


def skill_archive(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{name}/SKILL.md", f"---\nname: {name}\ndescription: a test skill\n---\nDo it.\n")
    return buffer.getvalue()


async def test_listen_hears_a_skill_registered_and_deleted(gateway: str) -> None:
    async with Client(f"{gateway}/mcp") as connected, httpx.AsyncClient(base_url=gateway, timeout=30) as rest:
        assert "Installed:" not in await skill_description(connected)
        async with connected.listen(tools_list_changed=True) as subscription:
            events = aiter(subscription)
            files = {"file": ("skill.zip", skill_archive("pdf-forms"), "application/zip")}
            assert (await rest.post("/v1/skills/register", files=files)).status_code == 200
            with anyio.fail_after(10):
                assert isinstance(await anext(events), ToolsListChanged)
            assert (await skill_description(connected)).endswith("Installed: pdf-forms.")
            assert (await rest.delete("/v1/skills/pdf-forms")).status_code == 200
            with anyio.fail_after(10):
                assert isinstance(await anext(events), ToolsListChanged)
            assert "Installed:" not in await skill_description(connected)


async def test_the_get_stream_carries_the_notification(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        async with http.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            files = {"file": ("skill.zip", skill_archive("notes"), "application/zip")}
            assert (await http.post("/v1/skills/register", files=files)).status_code == 200
            with anyio.fail_after(10):
                data = await first_data(stream.aiter_lines())
    assert json.loads(data) == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
    }


async def first_data(lines: AsyncIterator[str]) -> str:
    async for line in lines:
        if line.startswith("data:"):
            return line.removeprefix("data:").strip()
    raise AssertionError("the stream ended without an event")


async def test_listen_hears_an_upstream_start_and_die(aggregating_gateway: str, upstream_port: int) -> None:
    async with Client(f"{aggregating_gateway}/mcp") as connected:
        assert (await connected.session.discover()).capabilities.tools.list_changed  # type: ignore[union-attr]
        names = {tool.name for tool in (await connected.list_tools()).tools}
        assert "later_ping" not in names
        async with connected.listen(tools_list_changed=True) as subscription:
            events = aiter(subscription)
            with upstream_process(upstream_port, "later", ["ping"]) as process:
                with anyio.fail_after(30):
                    assert isinstance(await anext(events), ToolsListChanged)
                assert "later_ping" in {tool.name for tool in (await connected.list_tools()).tools}
                process.kill()
                process.wait()
                with anyio.fail_after(30):
                    assert isinstance(await anext(events), ToolsListChanged)
            assert "later_ping" not in {tool.name for tool in (await connected.list_tools()).tools}
            with anyio.move_on_after(3) as quiet:
                await anext(events)
            assert quiet.cancelled_caught, "one notification each, nothing more"
