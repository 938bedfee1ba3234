"""The upstream-call forwarder (the hot path in front of the MCP door): which requests it forwards
itself, that every other request reaches the door with its body intact, and that its answers are
exactly the door's answers for the same requests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentbox_gateway.doors.mcp.fast_path import ToolCallFastPath
from agentbox_gateway.doors.mcp.forwarding import UpstreamCalls
from tests.gateway.upstreams.test_aggregation_fakes import door, make_router, tool, upstream_app
from tests.support import shared_http
from tests.support.jsonrpc import MODERN_META, modern_headers
from tests.support.servers import free_port, serve_app

JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
BUILTINS = frozenset({"sandbox_echo"})
MAX_BODY = 4096


class RecordingDoor:
    """Stands in for the MCP door: records what reaches it and answers 299 with the body it read."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        body = await request.body()
        self.seen.append((request.method, body))
        await Response(body, status_code=299)(scope, receive, send)


@contextlib.contextmanager
def forwarder(upstream_url: str) -> Iterator[tuple[str, RecordingDoor]]:
    recording = RecordingDoor()
    router = make_router({"peer": {"url": upstream_url, "prefix": "peer"}})
    calls = UpstreamCalls(router, builtins=BUILTINS, server_info={"name": "test", "version": "1"})
    app = ToolCallFastPath(recording, [calls], max_body=MAX_BODY)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette):  # type: ignore[no-untyped-def]
        yield
        await router.aclose()

    with serve_app(Starlette(routes=[Route("/mcp", app)], lifespan=lifespan)) as url:
        yield f"{url}/mcp", recording


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with serve_app(upstream_app("peer", [tool("hello")])) as url:
        yield f"{url}/mcp"


def call(name: str, *, id: Any = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, **params}}


FORWARDED = {
    "no version header": ({}, call("peer_hello", arguments={"a": 1})),
    "2025-06-18": ({"MCP-Protocol-Version": "2025-06-18"}, call("peer_hello")),
    "2025-11-25": ({"MCP-Protocol-Version": "2025-11-25"}, call("peer_hello")),
    "string id": ({}, call("peer_hello", id="req-7")),
    "Accept */*": ({"Accept": "*/*"}, call("peer_hello")),
    "Accept application/json alone": ({"Accept": "application/json"}, call("peer_hello")),
    "charset parameter": ({"Content-Type": "application/json; charset=utf-8"}, call("peer_hello")),
    "name routed by its prefix before any listing": ({}, call("peer_unlisted")),
    "2026-07-28": (modern_headers("peer_hello"), call("peer_hello", _meta=MODERN_META)),
    "2026-07-28, arguments": (modern_headers("peer_hello"), call("peer_hello", arguments={"a": 1}, _meta=MODERN_META)),
}


@pytest.mark.parametrize("case", FORWARDED)
def test_a_handshake_era_call_for_an_upstream_tool_is_forwarded_without_the_door(peer: str, case: str) -> None:
    headers, message = FORWARDED[case]
    with forwarder(peer) as (url, recording):
        response = shared_http.post(url, json=message, headers={**JSON, **headers})
    assert recording.seen == []
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["id"] == message["id"]
    if message["params"]["name"] == "peer_hello":
        expected = 'peer:hello:{"a": 1}' if "arguments" in message["params"] else "peer:hello:{}"
        result = {"content": [{"type": "text", "text": expected}]}
        if "_meta" in message["params"]:  # the 2026-07-28 shape, stamped like the door's own results
            result.update(
                resultType="complete", _meta={"io.modelcontextprotocol/serverInfo": {"name": "test", "version": "1"}}
            )
        assert answer["result"] == result
    else:  # the upstream itself says it has no such tool
        assert answer["error"] == {"code": -32602, "message": "unknown tool: unlisted"}


LEFT_TO_THE_DOOR = {
    "tools/list": ({}, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    "a built-in tool": ({}, call("sandbox_echo")),
    "an unknown tool": ({}, call("stranger_hello")),
    "2026-07-28 without _meta": (modern_headers("peer_hello"), call("peer_hello")),
    "2026-07-28 without Mcp-Method": (
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": "peer_hello"},
        call("peer_hello", _meta=MODERN_META),
    ),
    "2026-07-28 naming another tool in Mcp-Name": (modern_headers("peer_other"), call("peer_hello", _meta=MODERN_META)),
    "2026-07-28 header, 2025 _meta": (
        modern_headers("peer_hello"),
        call("peer_hello", _meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
    ),
    "an unknown version": ({"MCP-Protocol-Version": "1999-01-01"}, call("peer_hello")),
    "a notification": ({}, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    "a batch": ({}, [call("peer_hello")]),
    "a boolean id": ({}, call("peer_hello", id=True)),
    "a null id": ({}, call("peer_hello", id=None)),
    "no jsonrpc version": ({}, {"id": 1, "method": "tools/call", "params": {"name": "peer_hello"}}),
    "params not an object": ({}, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["peer_hello"]}),
    "a name that is not a string": ({}, call(7)),  # type: ignore[arg-type]
    "arguments that are not an object": ({}, call("peer_hello", arguments=[1])),
    "Content-Type text/plain": ({"Content-Type": "text/plain"}, call("peer_hello")),
    "Accept without JSON": ({"Accept": "text/event-stream"}, call("peer_hello")),
}


@pytest.mark.parametrize("case", LEFT_TO_THE_DOOR)
def test_every_other_request_reaches_the_door_with_its_body_intact(peer: str, case: str) -> None:
    headers, message = LEFT_TO_THE_DOOR[case]
    body = httpx.Request("POST", "http://x", json=message).content
    with forwarder(peer) as (url, recording):
        response = shared_http.post(url, content=body, headers={**JSON, **headers})
    assert response.status_code == 299
    assert recording.seen == [("POST", body)]


def test_a_routing_header_sent_twice_reaches_the_door(peer: str) -> None:
    body = httpx.Request("POST", "http://x", json=call("peer_hello", _meta=MODERN_META)).content
    headers = [*JSON.items(), *modern_headers("peer_hello").items(), ("Mcp-Name", "peer_hello")]
    with forwarder(peer) as (url, recording):
        assert shared_http.post(url, content=body, headers=headers).status_code == 299
    assert recording.seen == [("POST", body)]


@pytest.mark.parametrize("shape", ["unparsable JSON", "oversized", "chunked", "GET", "DELETE"])
def test_bodies_the_forwarder_cannot_judge_and_other_methods_reach_the_door(peer: str, shape: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "peer_hello"'
    method = shape if shape in ("GET", "DELETE") else "POST"
    if shape == "oversized":
        body = httpx.Request("POST", "http://x", json=call("peer_hello", arguments={"x": "y" * MAX_BODY})).content
    elif shape in ("chunked", "GET", "DELETE"):
        body = httpx.Request("POST", "http://x", json=call("peer_hello")).content
    content: Any = iter([body]) if shape == "chunked" else body
    with forwarder(peer) as (url, recording), httpx.Client() as client:
        response = client.request(method, url, content=content, headers=JSON)
    assert response.status_code == 299
    assert recording.seen == [(method, body)]


RAW_RESULTS: dict[str, Any] = {
    "extra": {
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
        "vendorField": {"a": 1},
        "_meta": {"k": "v"},
    },
    "typed": {
        "content": [{"type": "text", "text": "x"}],
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "upstream", "version": "9"}},
    },
    "structured": {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": [1, None, "z"]}},
    "region": {"content": [{"type": "text", "text": "routed"}]},
    "invalid": {"content": "not a list"},
    "not_an_object": ["content"],
}
REGION_TOOL = tool(
    "region", inputSchema={"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
)


def raw_upstream_app() -> Starlette:
    """Answers each call with ``RAW_RESULTS[name]`` as is (an SDK server would reshape it)."""

    async def endpoint(request: Request) -> JSONResponse:
        message = await request.json()
        if message["method"] == "tools/list":
            result: Any = {"tools": [REGION_TOOL if name == "region" else tool(name) for name in RAW_RESULTS]}
        elif message["params"]["name"] == "rpc_error":
            return JSONResponse(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32001, "message": "busy", "data": {"retry": 2}},
                }
            )
        elif message["params"]["name"] == "rpc_bad_code":
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {"code": True, "message": 5}})
        elif message["params"]["name"] == "rpc_invalid_params":
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": "bad q"}})
        else:
            result = RAW_RESULTS[message["params"]["name"]]
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    return Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])])


def test_the_forwarders_answers_are_the_doors_answers(peer: str) -> None:
    raw_names = [*RAW_RESULTS, "rpc_error", "rpc_invalid_params", "rpc_bad_code"]
    names = ["peer_hello", *(f"raw_{name}" for name in raw_names), "gone_hello"]
    versions = [None, "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    with serve_app(raw_upstream_app()) as raw:
        servers = {
            "peer": {"url": peer, "prefix": "peer"},
            "raw": {"url": f"{raw}/mcp", "prefix": "raw"},
            "gone": {"url": f"http://127.0.0.1:{free_port()}/mcp", "prefix": "gone"},
        }
        with (
            door(make_router(servers), list(BUILTINS)) as fast,
            door(make_router(servers), list(BUILTINS), forwarder=False) as sdk,
        ):
            for url in (fast, sdk):  # both learn the tools' schemas, for the Mcp-Param-* rule
                shared_http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "tools/list"}, headers=JSON)
            cases: list[tuple[dict[str, str], dict[str, Any]]] = []
            for version in versions:
                for name in names:
                    message = call(name, id=f"{name}-{version}", arguments={"q": "x", "region": "eu"})
                    headers = {"MCP-Protocol-Version": version} if version else {}
                    if version == "2026-07-28":
                        message["params"]["_meta"] = MODERN_META
                        headers = modern_headers(name)
                    cases.append((headers, message))
            # The Mcp-Param-* rule: an agreeing header is forwarded, a disagreeing one is the door's 400.
            for region in ("eu", "us"):
                message = call("raw_region", id=f"region-{region}", arguments={"region": "eu"}, _meta=MODERN_META)
                cases.append((modern_headers("raw_region", **{"Mcp-Param-Region": region}), message))
            for headers, message in cases:
                answers = [shared_http.post(url, json=message, headers={**JSON, **headers}) for url in (fast, sdk)]
                by_fast, by_sdk = ((a.status_code, a.headers["content-type"], a.json()) for a in answers)
                assert by_fast == by_sdk, (headers, message)
                assert "vendorField" not in str(by_fast)  # both shape results for the client's version
                if message["params"]["name"] == "raw_rpc_bad_code":  # an error without an integer code
                    assert by_fast[2]["error"] == {"code": -32603, "message": "5"}
            assert by_fast[0] == 400 and by_fast[2]["error"]["code"] == -32020  # the disagreeing header
