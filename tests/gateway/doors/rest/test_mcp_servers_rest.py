"""``/v1/mcp/*`` through the agent-sandbox SDK (sync and async): the built-ins as server ``sandbox``
and each aggregated upstream (a real MCP server on loopback) as its own, listed and called over the
same routing as ``/mcp``; unknown servers and tools are 404 envelopes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response_call_tool_result_model import ResponseCallToolResultModel
from agent_sandbox.types.response_list_tools_result_model import ResponseListToolsResultModel

from agentbox_gateway.settings import GatewaySettings
from tests.gateway.upstreams.test_aggregation_fakes import tool, upstream_app
from tests.support import shared_http
from tests.support.servers import free_port, serve_app


@pytest.fixture
def peer() -> Iterator[str]:
    with serve_app(upstream_app("peer", [tool("echo"), tool("shout")])) as url:
        yield f"{url}/mcp"


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings, peer: str) -> GatewaySettings:
    dead = f"http://127.0.0.1:{free_port()}/mcp"
    return replace(
        gateway_settings,
        mcp_servers={"peer": {"url": peer, "prefix": "peer"}, "gone": {"url": dead, "prefix": "gone"}},
        upstream_list_timeout=1.0,
    )


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=30)


def test_servers_are_the_builtins_then_the_upstreams(client: Sandbox) -> None:
    assert client.mcp.list_mcp_servers().data == ["sandbox", "peer", "gone"]


def test_builtin_tools_are_listed_and_called(client: Sandbox, gateway_settings: GatewaySettings) -> None:
    listed = client.mcp.list_mcp_tools(server_name="sandbox")
    assert isinstance(listed, ResponseListToolsResultModel)
    names = [t.name for t in listed.data.tools]
    assert names[:3] == ["sandbox_execute_bash", "sandbox_execute_code", "sandbox_file_operations"]
    assert "peer_echo" not in names
    target = Path(gateway_settings.skills_path).parent / "via-rest.txt"
    written = client.mcp.execute_mcp_tool(
        server_name="sandbox",
        tool_name="sandbox_file_operations",
        request={"action": "write", "path": str(target), "content": "hello"},
    )
    assert isinstance(written, ResponseCallToolResultModel) and written.success is True
    assert target.read_text() == "hello"
    failed = client.mcp.execute_mcp_tool(server_name="sandbox", tool_name="sandbox_execute_bash", request={})
    assert failed.success is False and failed.data.is_error is True
    assert failed.data.content[0].text == "cmd is required"


def test_upstream_tools_are_listed_and_forwarded(client: Sandbox) -> None:
    listed = client.mcp.list_mcp_tools(server_name="peer")
    assert [t.name for t in listed.data.tools] == ["peer_echo", "peer_shout"]
    called = client.mcp.execute_mcp_tool(server_name="peer", tool_name="peer_echo", request={"word": "hi"})
    assert called.success is True and called.data.content[0].text == 'peer:echo:{"word": "hi"}'


def test_the_async_client_too(gateway: str) -> None:
    async def scenario() -> tuple[list[str], str]:
        client = AsyncSandbox(base_url=gateway, timeout=30)
        servers = (await client.mcp.list_mcp_servers()).data
        called = await client.mcp.execute_mcp_tool(server_name="peer", tool_name="peer_shout", request={})
        return servers, called.data.content[0].text

    servers, text = asyncio.run(scenario())
    assert servers == ["sandbox", "peer", "gone"] and text == "peer:shout:{}"


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/v1/mcp/nobody/tools", None, 404),
        ("POST", "/v1/mcp/nobody/tools/x", {}, 404),
        ("POST", "/v1/mcp/sandbox/tools/no_such_tool", {}, 404),
        ("POST", "/v1/mcp/peer/tools/sandbox_execute_bash", {}, 404),
        ("POST", "/v1/mcp/sandbox/tools/peer_echo", {}, 404),
        ("POST", "/v1/mcp/sandbox/tools/sandbox_execute_bash", [1, 2], 422),
        ("GET", "/v1/mcp/gone/tools", None, 503),
    ],
)
def test_bad_requests_are_envelopes(gateway: str, method: str, path: str, body: object, status: int) -> None:
    response = shared_http.request(method, f"{gateway}{path}", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False


def test_sdk_raises_on_unknown_server(client: Sandbox) -> None:
    with pytest.raises(ApiError) as missing:
        client.mcp.list_mcp_tools(server_name="nobody")
    assert missing.value.status_code == 404
