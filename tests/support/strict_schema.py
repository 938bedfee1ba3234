"""What the OpenAI Agents SDK does to an MCP tool's input schema before it offers the tool to a model
in strict mode (``agents.strict_schema.ensure_strict_json_schema``, which ``MCPUtil`` calls with
``convert_schemas_to_strict``), rewritten here rather than installed: the ``openai-agents`` package
pulls in its own ``mcp`` and ``openai`` pins for a 60-line function. A schema it refuses makes the
SDK fall back to a non-strict tool.

It closes every object (``additionalProperties: false``), makes every property required, drops
``"default": null``, inlines a ``$ref`` that has siblings and a one-item ``allOf``, and refuses an
object that allows additional properties, or a subschema that is not an object."""

from __future__ import annotations

import copy
from typing import Any


class NotStrict(ValueError):
    """The schema cannot be made strict (the Agents SDK raises ``UserError``/``TypeError`` here)."""


def ensure_strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The strict form of ``schema`` (a copy), or :class:`NotStrict` naming where it fails."""
    if schema == {}:
        return {"additionalProperties": False, "type": "object", "properties": {}, "required": []}
    root = copy.deepcopy(schema)
    return _strict(root, (), root)


def _strict(node: Any, path: tuple[str, ...], root: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise NotStrict(f"expected {node!r} to be a dictionary; path={path}")
    for keyword in ("$defs", "definitions"):
        defs = node.get(keyword)
        if isinstance(defs, dict):
            for name, sub in defs.items():
                _strict(sub, (*path, keyword, name), root)
    if node.get("type") == "object":
        if "additionalProperties" not in node:
            node["additionalProperties"] = False
        elif node["additionalProperties"]:
            raise NotStrict(f"additionalProperties should not be set for object types; path={path}")
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["required"] = list(properties)
        node["properties"] = {key: _strict(sub, (*path, "properties", key), root) for key, sub in properties.items()}
    items = node.get("items")
    if isinstance(items, dict):
        node["items"] = _strict(items, (*path, "items"), root)
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        node["anyOf"] = [_strict(sub, (*path, "anyOf", str(i)), root) for i, sub in enumerate(any_of)]
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        if len(all_of) == 1:
            node.update(_strict(all_of[0], (*path, "allOf", "0"), root))
            node.pop("allOf")
        else:
            node["allOf"] = [_strict(sub, (*path, "allOf", str(i)), root) for i, sub in enumerate(all_of)]
    if "default" in node and node["default"] is None:
        node.pop("default")
    ref = node.get("$ref")
    if ref and len(node) > 1:
        resolved = _resolve(root, ref)
        node.update({**resolved, **node})
        node.pop("$ref")
        return _strict(node, path, root)
    return node


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    if not ref.startswith("#/"):
        raise NotStrict(f"unexpected $ref format {ref!r}; does not start with #/")
    found: Any = root
    for key in ref[2:].split("/"):
        found = found[key]
    if not isinstance(found, dict):
        raise NotStrict(f"$ref {ref!r} does not point to a dictionary")
    return found


def closed_objects(schema: Any) -> bool:
    """Whether every object in a strict form is closed and requires all its properties (what
    OpenAI's strict mode checks)."""
    if isinstance(schema, list):
        return all(closed_objects(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return False
        if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
            return False
    return all(closed_objects(value) for value in schema.values())
