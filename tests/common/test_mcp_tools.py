"""The shared MCP tool registry and server builder (``agentbox_common.mcp_tools``), through the
official SDK's in-memory client: arguments checked once (with the schema's own draft, nulls as
omitted fields only where the schema describes the object), one catch for every failure, the
server's own error shape, and the -32602 answer for a name nobody publishes."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from agentbox_common.errors import ErrorKind, PlaneError
from agentbox_common.mcp_tools import ToolError, ToolRegistry, ToolSpec, build_server, json_result, text_result

pytestmark = pytest.mark.anyio

DRAFT_07 = "http://json-schema.org/draft-07/schema#"


async def _echo(args: dict[str, Any]) -> types.CallToolResult:
    return json_result(args)


class Missing(PlaneError):
    kind = ErrorKind.NOT_FOUND


async def _plane_error(args: dict[str, Any]) -> types.CallToolResult:
    raise Missing("no such session: s1", hint="sessions end after 30 minutes idle")


async def _tool_error(args: dict[str, Any]) -> types.CallToolResult:
    raise ToolError("the run failed", {"exit_code": 3})


async def _payload_error(args: dict[str, Any]) -> types.CallToolResult:
    raise ToolError("not found", payload={"success": False, "path": "/x"})


async def _bug(args: dict[str, Any]) -> types.CallToolResult:
    raise RuntimeError("oops")


NESTED = {
    "type": "object",
    "properties": {
        "action": {
            "type": "object",
            "properties": {"kind": {"type": "string"}, "x": {"type": "number"}},
            "required": ["kind"],
            "additionalProperties": False,
        },
        "data": {"type": "object", "additionalProperties": True},
        "note": {"type": "string"},
    },
    "additionalProperties": False,
}
#: ``dependencies`` is a draft-07 keyword (2020-12 spells it ``dependentRequired``).
DRAFT_07_SCHEMA = {"$schema": DRAFT_07, "type": "object", "dependencies": {"a": ["b"]}}
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}

SPECS = [
    ToolSpec("echo", "echo", NESTED, _echo),
    ToolSpec("draft7", "draft-07 schema", DRAFT_07_SCHEMA, _echo),
    ToolSpec("plane", "plane error", NO_ARGUMENTS, _plane_error),
    ToolSpec("failing", "tool error", NO_ARGUMENTS, _tool_error),
    ToolSpec("payload", "tool error with payload", NO_ARGUMENTS, _payload_error),
    ToolSpec("bug", "raises", NO_ARGUMENTS, _bug),
]


def _server(**registry: Any) -> Any:
    return build_server("test", ToolRegistry(SPECS, **registry), version="1", instructions="tests")


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_tools_are_listed_in_order_and_unknown_names_are_invalid_params() -> None:
    async with Client(_server()) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == [spec.name for spec in SPECS]
        with pytest.raises(MCPError) as raised:
            await client.call_tool("nope", {})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert raised.value.error.message == "unknown tool: nope"


async def test_nulls_are_omitted_fields_in_described_objects_and_data_elsewhere() -> None:
    async with Client(_server()) as client:
        result = await client.call_tool(
            "echo", {"note": None, "action": {"kind": "k", "x": None}, "data": {"default": None}}
        )
    assert _text(result) == '{"action":{"kind":"k"},"data":{"default":null}}'


async def test_arguments_are_checked_with_the_schemas_own_draft() -> None:
    async with Client(_server()) as client:
        refused = await client.call_tool("draft7", {"a": 1})
        nested = await client.call_tool("echo", {"action": {"x": 1}})
        unknown = await client.call_tool("echo", {"colour": "red"})
    assert refused.is_error and _text(refused) == "'b' is a dependency of 'a'"
    assert nested.is_error and _text(nested) == "kind is required"
    assert _text(unknown) == "unexpected argument colour (accepted: action, data, note)"


async def test_one_catch_answers_every_failure_as_an_is_error_text() -> None:
    async with Client(_server()) as client:
        plane = await client.call_tool("plane", {})
        failing = await client.call_tool("failing", {})
        payload = await client.call_tool("payload", {})
        bug = await client.call_tool("bug", {})
    assert plane.is_error and _text(plane) == "no such session: s1\nsessions end after 30 minutes idle"
    assert failing.is_error and _text(failing) == "the run failed"
    assert failing.structured_content == {"exit_code": 3}
    assert payload.is_error and _text(payload) == '{"path":"/x","success":false}'
    assert bug.is_error and _text(bug) == "bug failed: RuntimeError: oops"


async def test_a_server_shapes_its_own_error_results() -> None:
    def with_copy(text: str, structured: dict[str, Any] | None) -> types.CallToolResult:
        return text_result(text, is_error=True, structured={"result": text, **(structured or {})})

    async with Client(_server(error_result=with_copy)) as client:
        failing = await client.call_tool("failing", {})
        refused = await client.call_tool("echo", {"note": 5})
    assert failing.structured_content == {"result": "the run failed", "exit_code": 3}
    assert refused.structured_content == {"result": "note must be of type string"}


async def test_every_finished_call_is_told_once_with_its_outcome() -> None:
    told: list[tuple[str, bool | None]] = []

    def on_call(tool: str, result: types.CallToolResult | None, seconds: float) -> None:
        assert seconds >= 0
        told.append((tool, None if result is None else result.is_error))

    server = build_server("test", ToolRegistry(SPECS), version="1", instructions="tests", on_call=on_call)
    async with Client(server) as client:
        await client.call_tool("echo", {})
        await client.call_tool("bug", {})
        with pytest.raises(MCPError):
            await client.call_tool("nope", {})
    assert told == [("echo", False), ("bug", True), ("<unknown>", None)]


async def test_a_tool_is_handed_its_call_context_explicitly_and_never_publishes_it() -> None:
    """A handler of two parameters gets what the server's ``call_context`` built for that very call
    (here the JSON-RPC request id); one of the arguments alone is called without it."""
    seen: list[object] = []

    async def reads_its_call(args: dict[str, Any], call: str) -> types.CallToolResult:
        seen.append(call)
        return text_result(f"{call}:{args.get('note', '')}")

    specs = [ToolSpec("ctx", "reads its call", NESTED, reads_its_call), ToolSpec("plain", "echo", NESTED, _echo)]
    server = build_server(
        "test",
        ToolRegistry(specs),
        version="1",
        instructions="tests",
        call_context=lambda ctx: f"call-{ctx.request_id}",
    )
    async with Client(server) as client:
        published = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
        first = await client.call_tool("ctx", {"note": "a"})
        second = await client.call_tool("ctx", {"note": "b"})
        plain = await client.call_tool("plain", {"note": "c"})
    assert published == {"ctx": NESTED, "plain": NESTED}
    assert len(set(seen)) == 2 and [_text(first), _text(second)] == [f"{seen[0]}:a", f"{seen[1]}:b"]
    assert _text(plain) == '{"note":"c"}'
