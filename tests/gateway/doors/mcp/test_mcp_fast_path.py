"""The fast path for built-in tool calls on ``/mcp``: the same requests through the real door with and
without it get byte-identical answers (status, content type, body), errors included, in both
protocol eras; the calls it may answer never reach the SDK's transport, and the rest always do."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from mcp import types
from starlette.applications import Starlette

from agentbox_gateway.doors.mcp.server import build_mcp_routes, build_mcp_server
from agentbox_gateway.doors.mcp.tools.registry import ToolRegistry, ToolSpec
from agentbox_gateway.doors.mcp.tools.results import ToolError, json_result, text_result
from tests.support import shared_http
from tests.support.jsonrpc import MODERN_META, modern_headers
from tests.support.servers import serve_app

JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
VERSIONS = [None, "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": False}
STRICT_SCHEMA = {**TEXT_SCHEMA, "required": ["text"]}


async def _echo(args: dict[str, Any]) -> types.CallToolResult:
    return json_result({"echo": args.get("text", ""), "n": 1.5})


async def _fail(args: dict[str, Any]) -> types.CallToolResult:
    raise ToolError("it failed", payload={"reason": "asked to"})


async def _boom(args: dict[str, Any]) -> types.CallToolResult:
    raise RuntimeError("unexpected")


async def _plain(args: dict[str, Any]) -> types.CallToolResult:
    return text_result("plain ✓")


SPECS = [
    ToolSpec("t_echo", "echo", TEXT_SCHEMA, _echo),
    ToolSpec("t_fail", "fails", TEXT_SCHEMA, _fail),
    ToolSpec("t_boom", "raises", TEXT_SCHEMA, _boom),
    ToolSpec("t_strict", "needs text", STRICT_SCHEMA, _plain),
]
NAMES = frozenset(spec.name for spec in SPECS)


class DoorEntries:
    """Counts the requests that reach the SDK's JSON transport (its session manager's entry)."""

    def __init__(self, manager: Any) -> None:
        self.count = 0
        inner = manager.asgi_app

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            self.count += 1
            await inner(scope, receive, send)

        manager.asgi_app = counted


@contextlib.contextmanager
def door(*, fast_path: bool) -> Iterator[tuple[str, DoorEntries]]:
    server = build_mcp_server(ToolRegistry(SPECS))
    routes = build_mcp_routes(server, "127.0.0.1", builtins=NAMES, fast_path=fast_path)
    entries = DoorEntries(server.session_manager)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    with serve_app(Starlette(routes=routes, lifespan=lifespan)) as url:
        yield f"{url}/mcp", entries


def message(params: Any, *, id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


#: name -> params of calls the fast path answers itself.
FAST: dict[str, dict[str, Any]] = {
    "success": {"name": "t_echo", "arguments": {"text": 'héllo ✓ "quoted" \\ </script>'}},
    "no arguments": {"name": "t_echo"},
    "null argument": {"name": "t_echo", "arguments": {"text": None}},
    "isError from ToolError": {"name": "t_fail", "arguments": {}},
    "isError from an exception": {"name": "t_boom", "arguments": {}},
    "missing required argument": {"name": "t_strict", "arguments": {}},
    "argument of the wrong type": {"name": "t_strict", "arguments": {"text": 5}},
    "unknown argument": {"name": "t_echo", "arguments": {"nope": 1}},
    "non-ASCII result": {"name": "t_strict", "arguments": {"text": "x"}},
    "a 1 MiB argument": {"name": "t_echo", "arguments": {"text": "é\n" * (1 << 19)}},
}
#: name -> params of calls the SDK must answer (the fast path leaves them to it).
SLOW: dict[str, Any] = {
    "unknown tool": {"name": "t_missing", "arguments": {}},
    "arguments not an object": {"name": "t_echo", "arguments": [1]},
    "name not a string": {"name": 7},
    "no name": {"arguments": {}},
    "params not an object": ["t_echo"],
    "progress token": {"name": "t_echo", "arguments": {"text": "p"}, "_meta": {"progressToken": "tok"}},
    "a 1 MiB call of an unknown tool": {"name": "t_missing", "arguments": {"text": "x" * (1 << 20)}},
}


def requests_for(version: str | None, params: Any, id: Any) -> tuple[dict[str, str], dict[str, Any]]:
    headers = {"MCP-Protocol-Version": version} if version else {}
    body = message(params, id=id)
    if version == "2026-07-28" and isinstance(params, dict):
        name = params.get("name")
        body["params"] = {**params, "_meta": {**MODERN_META, **params.get("_meta", {})}}
        headers = modern_headers(name if isinstance(name, str) else "x")
    return headers, body


def answers(url: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes]:
    response = shared_http.post(url, json=body, headers={**JSON, **headers}, timeout=30)
    return response.status_code, response.headers["content-type"], response.content


def test_fast_and_sdk_answers_are_byte_identical_and_only_refusals_reach_the_sdk() -> None:
    with door(fast_path=True) as (fast, fast_entries), door(fast_path=False) as (sdk, sdk_entries):
        for version in VERSIONS:
            for index, (case, params) in enumerate({**FAST, **SLOW}.items()):
                for id in (index, f"id-{case}"):
                    headers, body = requests_for(version, params, id)
                    before = fast_entries.count
                    by_fast, by_sdk = answers(fast, headers, body), answers(sdk, headers, body)
                    assert by_fast == by_sdk, (version, case)
                    reached_sdk = fast_entries.count - before
                    expected = 0 if case in FAST else (0 if case == "progress token" else 1)
                    assert reached_sdk == expected, (version, case)  # progress calls take the SSE endpoint
        assert sdk_entries.count > 0


def test_fast_answers_carry_the_tools_results() -> None:
    with door(fast_path=True) as (url, entries):
        for version in VERSIONS:
            headers, body = requests_for(version, FAST["isError from ToolError"], 3)
            status, _, _ = answers(url, headers, body)
            answer = shared_http.post(url, json=body, headers={**JSON, **headers}).json()
            assert status == 200 and answer["id"] == 3
            assert answer["result"]["isError"] is True
            assert answer["result"]["content"] == [{"type": "text", "text": '{"reason":"asked to"}'}]
        assert entries.count == 0


def test_a_modern_call_whose_routing_headers_disagree_is_the_sdks_refusal() -> None:
    with door(fast_path=True) as (fast, fast_entries), door(fast_path=False) as (sdk, _):
        headers, body = requests_for("2026-07-28", FAST["success"], 1)
        for wrong in ({**headers, "Mcp-Name": "t_fail"}, {k: v for k, v in headers.items() if k != "Mcp-Method"}):
            assert answers(fast, wrong, body) == answers(sdk, wrong, body)
            assert answers(fast, wrong, body)[0] == 400
        assert fast_entries.count == 4


def test_a_progress_call_from_a_client_without_sse_is_answered_in_json_by_the_fast_path() -> None:
    json_only = {**JSON, "Accept": "application/json"}
    with door(fast_path=True) as (fast, fast_entries), door(fast_path=False) as (sdk, _):
        for version in VERSIONS:
            headers, body = requests_for(version, SLOW["progress token"], 5)
            by_fast = shared_http.post(fast, json=body, headers={**json_only, **headers}, timeout=30)
            by_sdk = shared_http.post(sdk, json=body, headers={**json_only, **headers}, timeout=30)
            assert (by_fast.status_code, by_fast.content) == (by_sdk.status_code, by_sdk.content), version
            assert by_fast.headers["content-type"] == "application/json"
        assert fast_entries.count == 0
