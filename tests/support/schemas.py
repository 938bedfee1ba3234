"""What strict tool-schema consumers (OpenAI's strict mode, Gemini, the MCP Inspector) require."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def subschemas(schema: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside ``schema`` with its location."""
    if isinstance(schema, dict):
        yield where or "/", schema
        for key, value in schema.items():
            if isinstance(value, dict) and key == "properties":
                for name, field in value.items():
                    yield from subschemas(field, f"{where}/{name}")
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                yield from subschemas(value, f"{where}/{key}")
            elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
                for index, option in enumerate(value):
                    yield from subschemas(option, f"{where}/{key}[{index}]")


def strictness_problems(name: str, schema: dict[str, Any]) -> list[str]:
    """Objects not closed with ``additionalProperties: false``, and nullable types (a ``null`` in a
    ``type`` list, an ``anyOf`` option or an ``enum``): optional must be "not required"."""
    problems = []
    for where, part in subschemas(schema):
        kinds = part.get("type")
        if kinds == "object" and part.get("additionalProperties") is not False:
            problems.append(f"{name}{where}: object without additionalProperties: false")
        if isinstance(kinds, list) or kinds == "null":
            problems.append(f"{name}{where}: type {kinds!r}")
        if None in part.get("enum", []):
            problems.append(f"{name}{where}: null in enum")
        for option in part.get("anyOf", []) + part.get("oneOf", []):
            if isinstance(option, dict) and option.get("type") == "null":
                problems.append(f"{name}{where}: nullable anyOf/oneOf")
    return problems
