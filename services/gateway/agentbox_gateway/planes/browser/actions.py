"""GUI actions (``browser_gui_execute_action`` / ``POST /v1/browser/actions``): parsed and checked
here, once for both doors, so a bad action is refused before any input reaches the page."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidAction
from .keys import KeyDef, resolve_combo, resolve_key

ACTION_TYPES = (
    "MOVE_TO",
    "MOVE_REL",
    "CLICK",
    "DOUBLE_CLICK",
    "RIGHT_CLICK",
    "MOUSE_DOWN",
    "MOUSE_UP",
    "DRAG_TO",
    "DRAG_REL",
    "SCROLL",
    "TYPING",
    "PRESS",
    "KEY_DOWN",
    "KEY_UP",
    "HOTKEY",
    "WAIT",
)
BUTTONS = ("left", "right", "middle")
MAX_WAIT_SECONDS = 10.0
MAX_SCROLL_NOTCHES = 100
MAX_CLICKS = 10
#: Typed key by key (about 1.5 ms a character), so bounded to keep a call under half a minute.
MAX_TEXT_CHARS = 20_000

#: Fields each action type cannot do without.
_REQUIRED = {
    "MOVE_TO": ("x", "y"),
    "DRAG_TO": ("x", "y"),
    "MOVE_REL": ("x_offset", "y_offset"),
    "DRAG_REL": ("x_offset", "y_offset"),
    "TYPING": ("text",),
    "PRESS": ("key",),
    "KEY_DOWN": ("key",),
    "KEY_UP": ("key",),
    "HOTKEY": ("keys",),
    "WAIT": ("duration",),
}


@dataclass(frozen=True)
class Action:
    """One validated action. Coordinates are screenshot pixels; keys are already resolved."""

    action_type: str
    x: float | None = None
    y: float | None = None
    x_offset: float = 0.0
    y_offset: float = 0.0
    button: str = "left"
    num_clicks: int = 1
    dx: int = 0
    dy: int = 0
    text: str = ""
    use_clipboard: bool = True
    keys: tuple[KeyDef, ...] = ()
    duration: float = 0.0

    @property
    def point(self) -> tuple[float, float] | None:
        """(x, y) when the action names a position (the two come together or not at all)."""
        return None if self.x is None or self.y is None else (self.x, self.y)


def _number(raw: Mapping[str, Any], name: str, *, minimum: float | None = None) -> float | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidAction(f"{name} must be a finite number", name)
    if minimum is not None and value < minimum:
        raise InvalidAction(f"{name} must be >= {minimum:g}", name)
    return float(value)


def _integer(raw: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidAction(f"{name} must be an integer", name)
    if not low <= value <= high:
        raise InvalidAction(f"{name} must be between {low} and {high}", name)
    return value


def _string(raw: Mapping[str, Any], name: str) -> str | None:
    value = raw.get(name)
    if value is not None and not isinstance(value, str):
        raise InvalidAction(f"{name} must be a string", name)
    return value


def _given_number(raw: Mapping[str, Any], name: str, *, minimum: float | None = None) -> float:
    """A number ``_REQUIRED`` has already asked for."""
    value = _number(raw, name, minimum=minimum)
    if value is None:
        raise InvalidAction(f"{name} is required", name)
    return value


def _given_string(raw: Mapping[str, Any], name: str) -> str:
    """A string ``_REQUIRED`` has already asked for."""
    value = _string(raw, name)
    if value is None:
        raise InvalidAction(f"{name} is required", name)
    return value


def _point(raw: Mapping[str, Any]) -> tuple[float | None, float | None]:
    x, y = _number(raw, "x", minimum=0), _number(raw, "y", minimum=0)
    if (x is None) != (y is None):
        raise InvalidAction("x and y must be given together", "x" if x is None else "y")
    return x, y


def parse_action(raw: Any) -> Action:
    """Turn an action object (as MCP and REST receive it) into an :class:`Action`."""
    if not isinstance(raw, Mapping):
        raise InvalidAction("action must be an object with an action_type", "action")
    kind = raw.get("action_type")
    if kind is None:
        raise InvalidAction("action_type is required", "action_type")
    if kind not in ACTION_TYPES:
        raise InvalidAction(f"action_type must be one of {', '.join(ACTION_TYPES)}", "action_type")
    for name in _REQUIRED.get(kind, ()):
        if raw.get(name) is None:
            raise InvalidAction(f"{name} is required for {kind}", name)

    if kind in ("MOVE_TO", "DRAG_TO"):
        x, y = _point(raw)
        return Action(kind, x=x, y=y)
    if kind in ("MOVE_REL", "DRAG_REL"):
        return Action(kind, x_offset=_given_number(raw, "x_offset"), y_offset=_given_number(raw, "y_offset"))
    if kind in ("CLICK", "DOUBLE_CLICK", "RIGHT_CLICK"):
        x, y = _point(raw)
        button = {"DOUBLE_CLICK": "left", "RIGHT_CLICK": "right"}.get(kind) or _button(raw)
        clicks = 2 if kind == "DOUBLE_CLICK" else (_integer(raw, "num_clicks", 1, MAX_CLICKS) or 1)
        return Action(kind, x=x, y=y, button=button, num_clicks=clicks)
    if kind in ("MOUSE_DOWN", "MOUSE_UP"):
        return Action(kind, button=_button(raw))
    if kind == "SCROLL":
        dx = _integer(raw, "dx", -MAX_SCROLL_NOTCHES, MAX_SCROLL_NOTCHES) or 0
        dy = _integer(raw, "dy", -MAX_SCROLL_NOTCHES, MAX_SCROLL_NOTCHES) or 0
        if dx == 0 and dy == 0:
            raise InvalidAction("SCROLL needs a non-zero dx or dy", "dy")
        return Action(kind, dx=dx, dy=dy)
    if kind == "TYPING":
        text = _given_string(raw, "text")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidAction(f"text is longer than {MAX_TEXT_CHARS} characters", "text")
        use_clipboard = raw.get("use_clipboard")
        if use_clipboard is not None and not isinstance(use_clipboard, bool):
            raise InvalidAction("use_clipboard must be a boolean", "use_clipboard")
        return Action(kind, text=text, use_clipboard=use_clipboard is not False)
    if kind == "PRESS":
        return Action(kind, keys=tuple(resolve_combo(_given_string(raw, "key"))))
    if kind in ("KEY_DOWN", "KEY_UP"):
        return Action(kind, keys=(resolve_key(_given_string(raw, "key")),))
    if kind == "HOTKEY":
        names = raw.get("keys")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise InvalidAction("keys must be a non-empty list of key names", "keys")
        return Action(kind, keys=tuple(key for name in names for key in resolve_combo(name)))
    duration = _given_number(raw, "duration", minimum=0)
    if duration > MAX_WAIT_SECONDS:
        raise InvalidAction(f"duration must be at most {MAX_WAIT_SECONDS:g} seconds", "duration")
    return Action(kind, duration=duration)


def _button(raw: Mapping[str, Any]) -> str:
    button: str | None = raw.get("button")
    if button is None:
        return "left"
    if button not in BUTTONS:
        raise InvalidAction(f"button must be one of {', '.join(BUTTONS)}", "button")
    return button


def action_schema() -> dict[str, Any]:
    """The JSON Schema of an action object, as :func:`parse_action` reads it: per ``action_type`` the
    fields it reads (others are ignored, so any value of theirs is valid) and the ones it needs. Key
    names are checked against the keyboard's table, which the schema names only in prose."""
    number: dict[str, Any] = {"type": "number"}
    point = {**number, "minimum": 0}
    notches = {"type": "integer", "minimum": -MAX_SCROLL_NOTCHES, "maximum": MAX_SCROLL_NOTCHES}
    key = {"type": "string", "description": "a key name (Enter, a, F5) or a combination (ctrl+shift+t)"}
    read: dict[str, dict[str, Any]] = {
        "MOVE_TO": {"x": point, "y": point},
        "DRAG_TO": {"x": point, "y": point},
        "MOVE_REL": {"x_offset": number, "y_offset": number},
        "DRAG_REL": {"x_offset": number, "y_offset": number},
        "CLICK": {"x": point, "y": point, "button": {"enum": list(BUTTONS)}},
        "DOUBLE_CLICK": {"x": point, "y": point},
        "RIGHT_CLICK": {"x": point, "y": point},
        "MOUSE_DOWN": {"button": {"enum": list(BUTTONS)}},
        "MOUSE_UP": {"button": {"enum": list(BUTTONS)}},
        "SCROLL": {"dx": notches, "dy": notches},
        "TYPING": {"text": {"type": "string", "maxLength": MAX_TEXT_CHARS}, "use_clipboard": {"type": "boolean"}},
        "PRESS": {"key": key},
        "KEY_DOWN": {"key": key},
        "KEY_UP": {"key": key},
        "HOTKEY": {"keys": {"type": "array", "items": key, "minItems": 1}},
        "WAIT": {"duration": {**number, "minimum": 0, "maximum": MAX_WAIT_SECONDS}},
    }
    clicks = {"type": "integer", "minimum": 1, "maximum": MAX_CLICKS}
    read["CLICK"]["num_clicks"] = read["RIGHT_CLICK"]["num_clicks"] = clicks
    nonzero = {
        "type": "integer",
        "anyOf": [{"minimum": 1, "maximum": MAX_SCROLL_NOTCHES}, {"minimum": -MAX_SCROLL_NOTCHES, "maximum": -1}],
    }
    null = {"type": "null"}
    variants: list[dict[str, Any]] = []
    for kind, fields in read.items():
        required = ["action_type", *_REQUIRED.get(kind, ())]
        properties: dict[str, Any] = {"action_type": {"const": kind}}
        properties.update({name: {"anyOf": [schema, null]} for name, schema in fields.items()})
        properties.update({name: fields[name] for name in _REQUIRED.get(kind, ())})
        if "x" in fields and kind not in _REQUIRED:  # a click's x and y: both numbers or neither
            variants.append(
                {
                    "type": "object",
                    "required": [*required, "x", "y"],
                    "properties": {**properties, "x": point, "y": point},
                }
            )
            properties.update({"x": null, "y": null})
        if kind == "SCROLL":  # at least one non-zero notch count
            variants.append(
                {"type": "object", "required": [*required, "dx"], "properties": {**properties, "dx": nonzero}}
            )
            properties["dy"] = nonzero
            required.append("dy")
        variants.append({"type": "object", "required": required, "properties": properties})
    return {"type": "object", "required": ["action_type"], "anyOf": variants}
