"""The built-in tools' input schemas are strict-client friendly: closed objects, optional fields
simply not required (no ``null`` types); a null sent for an optional field counts as omitted."""

from __future__ import annotations

from tests.support.jsonrpc import call_tool, rpc, tool_json
from tests.support.schemas import strictness_problems

#: The seed publishes sandbox_execute_code's schema verbatim (no additionalProperties); it is kept so.
SEED_VERBATIM = {"sandbox_execute_code"}


def test_every_builtin_schema_is_closed_and_has_no_nullable_types(mcp_url: str) -> None:
    tools = rpc(mcp_url, "tools/list").json()["result"]["tools"]
    assert len(tools) >= 10
    problems = [
        p
        for tool in tools
        if tool["name"] not in SEED_VERBATIM
        for p in strictness_problems(tool["name"], tool["inputSchema"])
    ]
    assert problems == []
    seed = next(t for t in tools if t["name"] == "sandbox_execute_code")["inputSchema"]
    assert all(p.endswith("additionalProperties: false") for p in strictness_problems("code", seed))


def test_null_for_an_optional_field_is_taken_as_omitted(mcp_url: str) -> None:
    listed = tool_json(
        call_tool(
            mcp_url,
            "sandbox_file_operations",
            {"action": "list", "path": "/tmp", "recursive": None, "show_hidden": None, "file_types": None},
        )
    )
    assert listed["success"] is True
    packages = call_tool(mcp_url, "sandbox_get_packages", {"language": None})
    assert packages.get("isError") is not True


def test_an_unknown_argument_is_an_error_naming_it(mcp_url: str) -> None:
    result = call_tool(mcp_url, "sandbox_get_context", {"verbose": True})
    assert result["isError"] is True and "verbose" in result["content"][0]["text"]
