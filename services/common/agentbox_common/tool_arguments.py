"""One way to say what is wrong with a tool's arguments, for every MCP server here (the gateway's
built-ins and the browser program's tools), so an agent reads the same sentence from both."""

from __future__ import annotations

from typing import Any

import jsonschema


def describe_invalid_arguments(error: jsonschema.ValidationError) -> str:
    """A short sentence naming the argument and what it must be."""
    expected: Any = error.validator_value  # the schema keyword's value: names for required, values for enum
    given: Any = error.instance or {}
    location = ".".join(str(part) for part in error.absolute_path)
    where = location or "arguments"
    if error.validator == "required":
        missing = [name for name in expected if name not in given]
        return f"{missing[0]} is required" if missing else error.message
    if error.validator == "additionalProperties":
        schema: Any = error.schema
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(given) - set(known))
        return f"unexpected argument {', '.join(extra)} (accepted: {', '.join(known) or 'none'})"
    if error.validator == "type":
        return f"{where} must be of type {expected}"
    if error.validator == "enum":
        return f"{where} must be one of {', '.join(repr(v) for v in expected)}"
    return f"{location}: {error.message}" if location else error.message
