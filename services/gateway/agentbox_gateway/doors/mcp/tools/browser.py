"""MCP door of the browser plane: ``browser_get_info``, ``browser_gui_screenshot``,
``browser_gui_execute_action`` (built-ins 8-10). Without Chromium they answer ``isError``, as the
seed says: no reachable CDP port (info), no computer-use worker (screenshot, actions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from ....planes.browser import (
    ACTION_TYPES,
    BUTTONS,
    MAX_SCROLL_NOTCHES,
    MAX_TEXT_CHARS,
    MAX_WAIT_SECONDS,
    BrowserUnavailable,
)
from ...shared.addresses import gateway_base
from ...shared.browser_links import browser_info_data
from ...web.live_view import VNC_PREFIX
from ..apps import LIVE_VIEW_URI, open_view, tool_meta
from .registry import BuiltinSpec, ToolContext, ToolSpec
from .results import ToolError, image_result, json_result

if TYPE_CHECKING:
    from ....planes import Planes

_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _optional(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    """An optional field: not required (a null sent for it counts as omitted, see the registry)."""
    return {"type": kind, "description": description, **extra}


ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "object",
            "description": "One GUI action. Coordinates are pixels of browser_gui_screenshot's image.",
            "properties": {
                "action_type": {
                    "type": "string",
                    "enum": list(ACTION_TYPES),
                    "description": (
                        "MOVE_TO/DRAG_TO need x, y; MOVE_REL/DRAG_REL need x_offset, y_offset; CLICK takes "
                        "x, y, button, num_clicks; DOUBLE_CLICK and RIGHT_CLICK take x, y; MOUSE_DOWN/MOUSE_UP "
                        "take button; SCROLL takes dx, dy; TYPING needs text; PRESS, KEY_DOWN, KEY_UP need key; "
                        "HOTKEY needs keys; WAIT needs duration"
                    ),
                },
                "x": _optional(
                    "number", "Target x in screenshot pixels (omit x and y to act where the pointer is)", minimum=0
                ),
                "y": _optional("number", "Target y in screenshot pixels", minimum=0),
                "x_offset": _optional("number", "Horizontal move from the pointer's position (pixels)"),
                "y_offset": _optional("number", "Vertical move from the pointer's position (pixels)"),
                "button": _optional("string", "Mouse button (default left)", enum=list(BUTTONS)),
                "num_clicks": _optional("integer", "Number of clicks (default 1)", minimum=1),
                "dx": _optional(
                    "integer",
                    "Horizontal wheel notches, positive scrolls right",
                    minimum=-MAX_SCROLL_NOTCHES,
                    maximum=MAX_SCROLL_NOTCHES,
                ),
                "dy": _optional(
                    "integer",
                    "Vertical wheel notches, positive scrolls down",
                    minimum=-MAX_SCROLL_NOTCHES,
                    maximum=MAX_SCROLL_NOTCHES,
                ),
                "text": _optional("string", "Text to type key by key (newlines press Enter)", maxLength=MAX_TEXT_CHARS),
                "use_clipboard": _optional(
                    "boolean",
                    "Characters without a key on a US keyboard (é, 中, "
                    "emoji) are pasted (default true) instead of sent as key events",
                ),
                "key": _optional(
                    "string",
                    "Key name: a character, Enter, Tab, Escape, Backspace, Delete, "
                    "ArrowUp, PageDown, Home, F5, ctrl, shift, alt, meta ... (PRESS also takes "
                    "combinations such as ctrl+c)",
                ),
                "keys": _optional(
                    "array",
                    'Keys pressed together, in order, e.g. ["ctrl", "shift", "t"]',
                    items={"type": "string"},
                    minItems=1,
                ),
                "duration": _optional(
                    "number", f"Seconds to wait (at most {MAX_WAIT_SECONDS:g})", minimum=0, maximum=MAX_WAIT_SECONDS
                ),
            },
            "required": ["action_type"],
            "additionalProperties": False,
        },
    },
    "required": ["action"],
    "additionalProperties": False,
}


def _no_worker(exc: BrowserUnavailable) -> ToolError:
    return ToolError(f"No computer-use worker: Chromium's DevTools endpoint is unreachable: {exc.cause}")


def tools(planes: Planes) -> list[BuiltinSpec]:
    """No Chromium is answered in the seed's words per tool; other plane errors by the registry."""
    plane = planes.browser
    local_base = gateway_base(planes.settings)
    ttl = planes.settings.ticket_ttl

    async def get_info(args: dict[str, Any], call: ToolContext) -> types.CallToolResult:
        try:
            info = await plane.info()
        except BrowserUnavailable as exc:
            raise ToolError(f"No reachable CDP port: {exc.cause}") from exc
        caller = call.request.scope if call.request is not None else None
        base = call.public_base(local_base)
        data = browser_info_data(info, base, caller)
        result = json_result(data)
        if data["vnc_url"] is not None:  # the live view's MCP App, where there is a live view
            open_view(result, caller, base, ttl, VNC_PREFIX)
        return result

    async def screenshot(args: dict[str, Any]) -> types.CallToolResult:
        try:
            shot = await plane.screenshot()
        except BrowserUnavailable as exc:
            raise _no_worker(exc) from exc
        caption = (
            f"Browser display {shot.width}x{shot.height} pixels (PNG); browser_gui_execute_action "
            "coordinates are pixels of this image."
        )
        return image_result(shot.data_base64, shot.mime_type, caption)

    async def execute_action(args: dict[str, Any]) -> types.CallToolResult:
        try:
            performed = await plane.execute_action(args["action"])
        except BrowserUnavailable as exc:
            raise _no_worker(exc) from exc
        return json_result({"status": "success", "action_performed": performed})

    return [
        ToolSpec(
            "browser_get_info",
            "Get information about the browser: the CDP WebSocket URL to connect Playwright or Puppeteer "
            "through this gateway, the user agent, the display size (viewport) and the VNC URL (null: "
            "none here). Hosts that render MCP Apps show the live view beside the result.",
            _NO_ARGUMENTS,
            get_info,
            meta=tool_meta(LIVE_VIEW_URI),
        ),
        ToolSpec(
            "browser_gui_screenshot",
            "Take a screenshot of the browser's display (the page currently shown). Returns a PNG image; "
            "use its pixel coordinates with browser_gui_execute_action.",
            _NO_ARGUMENTS,
            screenshot,
        ),
        ToolSpec(
            "browser_gui_execute_action",
            "Perform one GUI action on the browser's display with real mouse and keyboard events: "
            "MOVE_TO, MOVE_REL, CLICK, DOUBLE_CLICK, RIGHT_CLICK, MOUSE_DOWN, MOUSE_UP, DRAG_TO, DRAG_REL, "
            f"SCROLL (at most {MAX_SCROLL_NOTCHES} notches), TYPING, PRESS, KEY_DOWN, KEY_UP, HOTKEY, WAIT "
            f"(at most {MAX_WAIT_SECONDS:g} s). Coordinates are screenshot pixels; the pointer and held "
            "keys stay where the last action left them.",
            ACTION_SCHEMA,
            execute_action,
        ),
    ]
