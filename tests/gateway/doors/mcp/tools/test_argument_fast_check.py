"""The argument check's jsonschema-rs shortcut (``agentbox_common.mcp_tools.arguments``) against
jsonschema itself: for the built-in tools' schemas, every argument set jsonschema refuses is still
refused (with jsonschema's sentence), and a schema with keywords the two read differently never
takes the shortcut."""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest

from agentbox_common.mcp_tools import ToolError
from agentbox_common.mcp_tools.arguments import ArgumentCheck, fast_validator, is_plain
from agentbox_gateway.doors.mcp.tools import code, editor, files, shell

SCHEMAS = {
    "code": code.INPUT_SCHEMA,
    "editor": editor.INPUT_SCHEMA,
    "files": files.INPUT_SCHEMA,
    "shell": shell.INPUT_SCHEMA,
}
VALUES: list[Any] = [True, False, 0, -1, 3, 1.0, 2.5, "", "read", "utf-8", "view", [], ["a"], [1], {}, {"a": 1}]


def _candidates(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The required arguments with each value in turn, each other argument with each value, an
    unknown argument and a missing required one."""
    properties = schema["properties"]
    required = schema.get("required", [])
    base = {name: _valid_value(properties[name]) for name in required}
    sets = [dict(base), {**base, "unknown": 1}]
    sets += [{k: v for k, v in base.items() if k != name} for name in required]
    for name, value in itertools.product(properties, VALUES):
        sets.append({**base, name: value})
    return sets


def _valid_value(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "/tmp/x", "integer": 1, "boolean": True, "array": [], "object": {}}[schema.get("type", "string")]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_shortcut_refuses_what_jsonschema_refuses_with_its_sentence(name: str) -> None:
    schema = SCHEMAS[name]
    assert fast_validator(schema) is not None
    reference = jsonschema.Draft202012Validator(schema)
    check, slow = ArgumentCheck(schema), _without_shortcut(schema)
    for arguments in _candidates(schema):
        valid = reference.is_valid(arguments)
        try:
            check(arguments)
        except ToolError as refused:
            assert not valid, arguments
            with pytest.raises(ToolError) as expected:
                slow(arguments)
            assert str(refused) == str(expected.value)
        else:
            assert valid, arguments


def _without_shortcut(schema: dict[str, Any]) -> ArgumentCheck:
    """The check as it was before the shortcut: jsonschema judges every argument set."""
    check = ArgumentCheck(schema)
    check._compiled()
    check._fast = None
    return check


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/s.json"}}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^\\w+$"}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
        {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}},
        {"type": "object", "dependencies": {"a": ["b"]}},
        {"type": "object", "items": [{"type": "string"}]},
    ],
)
def test_keywords_the_two_read_differently_keep_jsonschema_alone(schema: dict[str, Any]) -> None:
    assert not is_plain(schema) and fast_validator(schema) is None
