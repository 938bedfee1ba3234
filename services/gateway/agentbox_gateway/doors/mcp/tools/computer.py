"""MCP door of the computer plane, beside ``browser_gui_*``: ``computer_accessibility_nodes`` (the
display's accessibility tree searched as a flat list, with node ids) and ``computer_execute_actions``
(a batch of actions applied with nothing else acting on the display between them, including the
node actions), so an agent acts on an element by its node, not by a pixel."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from mcp import types

from ....planes.computer import (
    ACTION_TYPES,
    MAX_BATCH_ACTIONS,
    MAX_BATCH_WAIT_SECONDS,
    tree_query,
)
from .browser import ACTION_SCHEMA as GUI_ACTION_SCHEMA
from .registry import BuiltinSpec, ToolSpec
from .results import compact_json, json_result

if TYPE_CHECKING:
    from ....planes import Planes

NODES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "description": "AT-SPI role to match, e.g. 'push button', 'entry', 'link'"},
        "name": {"type": "string", "description": "Accessible name to match (a label, a button's text)"},
        "match": {
            "type": "string",
            "enum": ["substring", "exact", "regex"],
            "description": "How role and name compare, case-insensitively (default substring)",
        },
        "states": {"type": "string", "description": "Comma-separated states a node must carry, e.g. 'focusable'"},
        "scope": {
            "type": "string",
            "enum": ["foreground", "desktop"],
            "description": "The active window (default) or every window",
        },
        "include_offscreen": {"type": "boolean", "description": "Include nodes not showing (default false)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most nodes returned (50)"},
        "node_id": {"type": "string", "description": "Read this one node now (the search fields are ignored)"},
    },
    "additionalProperties": False,
}

_GUI_ACTION: dict[str, Any] = GUI_ACTION_SCHEMA["properties"]["action"]
#: One action of a batch: browser_gui_execute_action's fields, and the desktop's own.
ACTION_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_GUI_ACTION["properties"],
        "action_type": {"type": "string", "enum": list(ACTION_TYPES)},
        "text": {"type": "string", "description": "TYPING's text, or SET_CLIPBOARD's"},
        "window_id": {"type": "integer", "minimum": 1, "description": "A window_id from the window list"},
        "node_id": {"type": "string", "description": "A node_id from computer_accessibility_nodes"},
        "action": {"type": "string", "description": "NODE_INVOKE: the node's action to run (default its first)"},
        "value": {"type": "string", "description": "NODE_SET_VALUE: the value to set (a number is taken too)"},
    },
    "required": ["action_type"],
    "additionalProperties": False,
}

ACTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "actions": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_BATCH_ACTIONS,
            "description": (
                "Action objects run in order, each with an action_type: "
                f"{', '.join(ACTION_TYPES)}. Mouse and keyboard actions take the fields of "
                "browser_gui_execute_action (x, y in screen pixels); SET_CLIPBOARD needs text; "
                "WINDOW_ACTIVATE and WINDOW_MINIMIZE need window_id; NODE_FOCUS, NODE_INVOKE (optional "
                "action, the node's action name) and NODE_SET_VALUE (value) need a node_id from "
                f"computer_accessibility_nodes. WAITs total at most {MAX_BATCH_WAIT_SECONDS:g} s."
            ),
            "items": ACTION_ITEM_SCHEMA,
        },
        "include_screenshot": {"type": "boolean", "description": "Add a screenshot after the last action"},
    },
    "required": ["actions"],
    "additionalProperties": False,
}
#: What a call is checked against: as published, with a number taken for NODE_SET_VALUE's value.
ACTIONS_ACCEPTED: dict[str, Any] = copy.deepcopy(ACTIONS_SCHEMA)
ACTIONS_ACCEPTED["properties"]["actions"]["items"]["properties"]["value"]["type"] = ["string", "number"]


def tools(planes: Planes) -> list[BuiltinSpec]:
    plane = planes.computer

    async def accessibility_nodes(args: dict[str, Any]) -> types.CallToolResult:
        node_id = args.get("node_id")
        if node_id is not None:
            return json_result({"nodes": [(await plane.node(node_id)).as_dict(False)], "truncated": False})
        query = tree_query(
            role=args.get("role"),
            name=args.get("name"),
            match=args.get("match"),
            states=args.get("states"),
            scope=args.get("scope"),
            include_offscreen=args.get("include_offscreen"),
            limit=args.get("limit"),
        )
        tree = await plane.accessibility(query)
        nodes = [node.as_dict(False) for node in tree.nodes[: query.limit]]
        return json_result({"nodes": nodes, "truncated": tree.truncated or len(tree.nodes) > query.limit})

    async def execute_actions(args: dict[str, Any]) -> types.CallToolResult:
        result = await plane.execute_batch(args["actions"], bool(args.get("include_screenshot")))
        summary = {"performed": result.performed, "failed_index": result.failed_index, "error": result.error}
        if result.screenshot_error is not None:
            summary["screenshot_error"] = result.screenshot_error
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=compact_json(summary))]
        if result.screenshot is not None:
            content.append(types.ImageContent(type="image", data=result.screenshot.data_base64, mime_type="image/png"))
        return types.CallToolResult(content=content, is_error=result.failed_index is not None)

    return [
        ToolSpec(
            "computer_accessibility_nodes",
            "Search the display's accessibility tree (every window's widgets, the browser's page elements "
            "included) by role, name and states. Each node has a node_id (valid while its element exists), "
            "its role, name, states and screen bounds. Act on a node with computer_execute_actions: "
            "NODE_FOCUS, NODE_INVOKE (press a button, follow a link), NODE_SET_VALUE (fill a field).",
            NODES_SCHEMA,
            accessibility_nodes,
        ),
        ToolSpec(
            "computer_execute_actions",
            f"Apply up to {MAX_BATCH_ACTIONS} actions to the display in order, with no other client's input "
            "between them: mouse and keyboard (as browser_gui_execute_action), WAIT, SET_CLIPBOARD, "
            "WINDOW_ACTIVATE, WINDOW_MINIMIZE and the accessibility node actions NODE_FOCUS, NODE_INVOKE, "
            "NODE_SET_VALUE. Stops at the first failing action (failed_index, error); optionally adds "
            "a screenshot after.",
            ACTIONS_SCHEMA,
            execute_actions,
            accepts=ACTIONS_ACCEPTED,
        ),
    ]
