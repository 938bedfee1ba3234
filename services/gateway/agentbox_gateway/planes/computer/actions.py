"""``/v2/computer`` actions: the browser's GUI actions (mouse, keyboard, ``WAIT``) plus the desktop's
own: the clipboard, windows, and accessibility nodes. Parsed and checked here, once for every door,
so a bad action (or a bad action anywhere in a batch) is refused before any input reaches the display."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..browser import ACTION_TYPES as INPUT_ACTION_TYPES
from ..browser import Action, InvalidAction, parse_action
from ..browser.actions import action_schema as input_action_schema
from .errors import InvalidComputerAction

DESKTOP_ACTION_TYPES = (
    "SET_CLIPBOARD",
    "WINDOW_ACTIVATE",
    "WINDOW_MINIMIZE",
    "NODE_FOCUS",
    "NODE_INVOKE",
    "NODE_SET_VALUE",
)
ACTION_TYPES = (*INPUT_ACTION_TYPES, *DESKTOP_ACTION_TYPES)
MAX_BATCH_ACTIONS = 50
#: The WAITs of one batch together: a batch holds the display, so it must not hold it long.
MAX_BATCH_WAIT_SECONDS = 20.0
#: Text put on the clipboard or read from it, either way (AIO's cap).
MAX_CLIPBOARD_BYTES = 1024 * 1024
MAX_VALUE_CHARS = 20_000

_REQUIRED = {
    "SET_CLIPBOARD": ("text",),
    "WINDOW_ACTIVATE": ("window_id",),
    "WINDOW_MINIMIZE": ("window_id",),
    "NODE_FOCUS": ("node_id",),
    "NODE_INVOKE": ("node_id",),
    "NODE_SET_VALUE": ("node_id", "value"),
}


@dataclass(frozen=True)
class DesktopAction:
    """One validated desktop action (not mouse or keyboard input)."""

    action_type: str
    text: str = ""
    window_id: int = 0
    node_id: str = ""
    action: str | None = None
    value: str = ""


ComputerAction = Action | DesktopAction


def _string(raw: Mapping[str, Any], name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        raise InvalidComputerAction(f"{name} must be a string", name)
    return value


def parse_computer_action(raw: Any) -> ComputerAction:
    """Turn an action object (as MCP and REST receive it) into an :class:`Action` or :class:`DesktopAction`."""
    if not isinstance(raw, Mapping):
        raise InvalidComputerAction("action must be an object with an action_type", "action")
    kind = raw.get("action_type")
    if kind not in DESKTOP_ACTION_TYPES:
        if kind is not None and kind not in INPUT_ACTION_TYPES:
            raise InvalidComputerAction(f"action_type must be one of {', '.join(ACTION_TYPES)}", "action_type")
        try:
            return parse_action(raw)
        except InvalidAction as exc:
            raise InvalidComputerAction(exc.detail, exc.field) from exc
    for name in _REQUIRED[kind]:
        if raw.get(name) is None:
            raise InvalidComputerAction(f"{name} is required for {kind}", name)
    if kind == "SET_CLIPBOARD":
        text = _string(raw, "text")
        if len(text.encode()) > MAX_CLIPBOARD_BYTES:
            raise InvalidComputerAction(f"text is larger than {MAX_CLIPBOARD_BYTES} bytes", "text")
        return DesktopAction(kind, text=text)
    if kind in ("WINDOW_ACTIVATE", "WINDOW_MINIMIZE"):
        window_id = raw.get("window_id")
        if isinstance(window_id, bool) or not isinstance(window_id, int) or window_id <= 0:
            raise InvalidComputerAction("window_id must be a positive integer (from the window list)", "window_id")
        return DesktopAction(kind, window_id=window_id)
    node_id = _string(raw, "node_id")
    if kind == "NODE_INVOKE":
        action = raw.get("action")
        if action is not None and not isinstance(action, str):
            raise InvalidComputerAction("action must be a string (the name of one of the node's actions)", "action")
        return DesktopAction(kind, node_id=node_id, action=action)
    if kind == "NODE_SET_VALUE":
        value = raw.get("value")
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise InvalidComputerAction("value must be a string or a number", "value")
        text = value if isinstance(value, str) else str(value)
        if len(text) > MAX_VALUE_CHARS:
            raise InvalidComputerAction(f"value is longer than {MAX_VALUE_CHARS} characters", "value")
        return DesktopAction(kind, node_id=node_id, value=text)
    return DesktopAction(kind, node_id=node_id)


def parse_batch(raw: Any) -> list[ComputerAction]:
    """A batch's actions, all checked before the first runs: at most :data:`MAX_BATCH_ACTIONS`, their
    WAITs at most :data:`MAX_BATCH_WAIT_SECONDS` together. A bad one is named by its index."""
    if not isinstance(raw, list) or not raw:
        raise InvalidComputerAction("actions must be a non-empty list of action objects", "actions")
    if len(raw) > MAX_BATCH_ACTIONS:
        raise InvalidComputerAction(f"a batch takes at most {MAX_BATCH_ACTIONS} actions", "actions")
    actions: list[ComputerAction] = []
    for index, item in enumerate(raw):
        try:
            actions.append(parse_computer_action(item))
        except InvalidComputerAction as exc:
            raise InvalidComputerAction(f"actions[{index}]: {exc.detail}", f"actions.{index}") from exc
    waited = sum(a.duration for a in actions if isinstance(a, Action) and a.action_type == "WAIT")
    if waited > MAX_BATCH_WAIT_SECONDS:
        raise InvalidComputerAction(f"the batch's WAITs total at most {MAX_BATCH_WAIT_SECONDS:g} seconds", "actions")
    return actions


def computer_action_schema() -> dict[str, Any]:
    """The JSON Schema of an action object: the browser's input actions and the desktop's."""
    text = {"type": "string"}
    window = {"type": "integer", "minimum": 1, "description": "a window_id from the window list"}
    node = {"type": "string", "description": "a node_id from the accessibility tree"}
    fields: dict[str, dict[str, Any]] = {
        "SET_CLIPBOARD": {"text": text},
        "WINDOW_ACTIVATE": {"window_id": window},
        "WINDOW_MINIMIZE": {"window_id": window},
        "NODE_FOCUS": {"node_id": node},
        "NODE_INVOKE": {"node_id": node, "action": {"anyOf": [text, {"type": "null"}]}},
        "NODE_SET_VALUE": {"node_id": node, "value": {"type": ["string", "number"]}},
    }
    variants = [
        {
            "type": "object",
            "required": ["action_type", *_REQUIRED[kind]],
            "properties": {"action_type": {"const": kind}, **props},
        }
        for kind, props in fields.items()
    ]
    schema = input_action_schema()
    return {"type": "object", "required": ["action_type"], "anyOf": [*schema["anyOf"], *variants]}
