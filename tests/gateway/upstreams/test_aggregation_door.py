"""Aggregation on the wire: the gateway's MCP door (fake built-ins + the real upstream router) in
front of real upstreams. Forwarded answers come back unedited, errors have the seed's shapes, only
the entry's own headers reach an upstream, and a hanging upstream cannot stall ``tools/list``."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.gateway.upstreams.test_aggregation_fakes import (
    HeaderRecorder,
    door,
    hanging_upstream,
    make_router,
    tool,
    upstream_app,
)
from tests.support.jsonrpc import MODERN_META, call_tool, list_tool_names, modern_headers, rpc
from tests.support.servers import free_port, serve_app

BUILTINS = ["sandbox_echo", "peer_taken"]


RICH_RESULT = {
    "content": [
        {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}, "_meta": {"k": 1}},
        {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"},
    ],
    "structuredContent": {"answer": 42, "nested": {"list": [1, "two", None]}},
    "_meta": {"trace": "abc", "io.example/cost": 3},
}
ERROR_RESULT = {"content": [{"type": "text", "text": "it broke"}], "isError": True}
BARE_RESULT = {"content": [{"type": "text", "text": "no isError field"}]}
RICH_TOOL = tool(
    "rich",
    title="Rich tool",
    annotations={"readOnlyHint": True, "openWorldHint": False},
    outputSchema={"type": "object", "properties": {"answer": {"type": "integer"}}},
    inputSchema={
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    },
    _meta={"io.example/owner": "team-a"},
)


@pytest.fixture
def peer() -> Any:
    app = upstream_app(
        "peer",
        [RICH_TOOL, tool("error"), tool("bare"), tool("taken"), tool("hello")],
        results={"rich": RICH_RESULT, "error": ERROR_RESULT, "bare": BARE_RESULT},
    )
    with serve_app(app) as url:
        yield f"{url}/mcp"


def test_catalogue_order_builtins_then_upstreams_and_builtins_win(peer: str) -> None:
    with door(make_router({"peer": {"url": peer, "prefix": "peer"}}), BUILTINS) as mcp:
        assert list_tool_names(mcp) == [
            "sandbox_echo",
            "peer_taken",
            "peer_rich",
            "peer_error",
            "peer_bare",
            "peer_hello",
        ]
        # The built-in keeps its name for calls too.
        assert call_tool(mcp, "peer_taken", {"text": "x"})["content"][0]["text"] == "builtin:x"


def test_tool_definitions_pass_through_with_only_the_name_changed(peer: str) -> None:
    with door(make_router({"peer": {"url": peer, "prefix": "peer"}}), BUILTINS) as mcp:
        tools = rpc(mcp, "tools/list").json()["result"]["tools"]
        published = next(t for t in tools if t["name"] == "peer_rich")
        assert published == {**RICH_TOOL, "name": "peer_rich"}


@pytest.mark.parametrize("version", [None, "2025-06-18", "2025-11-25"])
def test_forwarded_results_come_back_unedited(peer: str, version: str | None) -> None:
    headers = {"MCP-Protocol-Version": version} if version else {}
    with door(make_router({"peer": {"url": peer, "prefix": "peer"}}), BUILTINS) as mcp:
        for name, expected in (("rich", RICH_RESULT), ("error", ERROR_RESULT), ("bare", BARE_RESULT)):
            direct = call_tool(peer, name, {"q": "x"}, headers=headers)
            assert direct == expected
            assert call_tool(mcp, f"peer_{name}", {"q": "x"}, headers=headers) == direct


def test_upstream_jsonrpc_errors_pass_through(peer: str) -> None:
    with door(make_router({"peer": {"url": peer, "prefix": "peer"}}), BUILTINS) as mcp:
        response = rpc(mcp, "tools/call", {"name": "peer_nope", "arguments": {}}, id=5)
        assert response.status_code == 200
        assert response.json() == {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {"code": -32602, "message": "unknown tool: nope"},
        }


def test_unknown_tool_is_32602_and_a_down_upstream_is_an_error_result(peer: str) -> None:
    servers = {
        "peer": {"url": peer, "prefix": "peer"},
        "gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "prefix": "gone"},
    }
    with door(make_router(servers), BUILTINS) as mcp:
        assert "gone_hello" not in list_tool_names(mcp)
        response = rpc(mcp, "tools/call", {"name": "stranger_hello", "arguments": {}}, id=3)
        assert response.json()["error"] == {"code": -32602, "message": "unknown tool: stranger_hello"}
        result = call_tool(mcp, "gone_hello", {})
        assert result["isError"] is True
        assert result["content"] == [{"type": "text", "text": "upstream gone unavailable: connection refused"}]


def test_entry_headers_are_sent_and_the_clients_authorization_never_is() -> None:
    with_token = HeaderRecorder(upstream_app("a", [tool("hello")]))
    without = HeaderRecorder(upstream_app("b", [tool("hello")]))
    with serve_app(with_token) as a, serve_app(without) as b:
        servers = {
            "a": {"url": f"{a}/mcp", "prefix": "a", "headers": {"Authorization": "Bearer upstream-a", "X-Team": "t1"}},
            "b": {"url": f"{b}/mcp", "prefix": "b"},
        }
        client = {"Authorization": "Bearer client-secret", "X-Client-Only": "leak?"}
        with door(make_router(servers), BUILTINS) as mcp:
            assert list_tool_names(mcp, headers=client)[-2:] == ["a_hello", "b_hello"]
            call_tool(mcp, "a_hello", {}, headers=client)
            call_tool(mcp, "b_hello", {}, headers=client)
    assert len(with_token.requests) == 2 and len(without.requests) == 2
    for seen in with_token.requests:
        assert seen["authorization"] == "Bearer upstream-a" and seen["x-team"] == "t1"
    for seen in without.requests:
        assert "authorization" not in seen
    for seen in with_token.requests + without.requests:
        assert "client-secret" not in str(seen) and "x-client-only" not in seen
        assert seen["accept"] == "application/json, text/event-stream"
        assert seen["content-type"] == "application/json"
        assert "mcp-protocol-version" not in seen and "mcp-session-id" not in seen


@pytest.mark.anyio
async def test_a_hanging_upstream_is_bounded_on_the_wire(peer: str) -> None:
    async with hanging_upstream() as hang:
        servers = {"hang": {"url": hang, "prefix": "hang"}, "peer": {"url": peer, "prefix": "peer"}}
        with door(make_router(servers, list_timeout=0.5), BUILTINS) as mcp:
            async with httpx.AsyncClient(timeout=10) as client:
                started = time.monotonic()
                response = await client.post(mcp, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                elapsed = time.monotonic() - started
    names = [t["name"] for t in response.json()["result"]["tools"]]
    assert names == ["sandbox_echo", "peer_taken", "peer_rich", "peer_error", "peer_bare", "peer_hello"]
    assert elapsed < 1.5


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_sdk_clients_of_both_eras_see_forwarded_answers(peer: str, mode: str) -> None:
    with door(make_router({"peer": {"url": peer, "prefix": "peer"}}), BUILTINS) as mcp:
        async with Client(mcp, mode=mode) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools][2:] == ["peer_rich", "peer_error", "peer_bare", "peer_hello"]
            assert listed.tools[2].output_schema == RICH_TOOL["outputSchema"]
            rich = await client.call_tool("peer_rich", {"q": "x"})
            assert not rich.is_error and rich.structured_content == RICH_RESULT["structuredContent"]
            assert rich.meta is not None and rich.meta["trace"] == "abc"
            assert [block.type for block in rich.content] == ["text", "image", "resource_link"]
            failed = await client.call_tool("peer_error", {})
            assert failed.is_error and failed.content[0].text == "it broke"
            hello = await client.call_tool("peer_hello", {})
            assert hello.content[0].text == "peer:hello:{}"


@pytest.mark.anyio
async def test_a_2026_era_call_never_waits_for_a_listing_of_the_upstreams(peer: str) -> None:
    """The SDK checks ``Mcp-Param-*`` headers against the called tool's schema; the door answers
    that from what it already knows instead of letting the SDK list every upstream per call."""
    async with hanging_upstream() as hang:
        servers = {"hang": {"url": hang, "prefix": "hang"}, "peer": {"url": peer, "prefix": "peer"}}
        with door(make_router(servers, list_timeout=3), BUILTINS) as mcp:
            async with httpx.AsyncClient(timeout=10) as client:
                await client.post(mcp, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # 3 s: hang
                for name in ("sandbox_echo", "peer_hello"):
                    headers = modern_headers(name)
                    params = {"name": name, "arguments": {"text": "x"}, "_meta": MODERN_META}
                    started = time.monotonic()
                    response = await client.post(
                        mcp, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
                    )
                    assert time.monotonic() - started < 1.5, name
                    result = response.json()["result"]
                    assert result["resultType"] == "complete" and not result.get("isError"), result
