"""The browser plane (GUI screenshot, GUI input, browser info) over Chromium's DevTools endpoint."""

from .actions import (
    ACTION_TYPES,
    BUTTONS,
    MAX_SCROLL_NOTCHES,
    MAX_TEXT_CHARS,
    MAX_WAIT_SECONDS,
    Action,
    action_schema,
    parse_action,
)
from .errors import BrowserError, BrowserProgramUnavailable, BrowserUnavailable, InvalidAction, PageFailed
from .plane import RESOLUTIONS, BrowserInfo, BrowserPlane, Screenshot

__all__ = [
    "ACTION_TYPES",
    "BUTTONS",
    "MAX_SCROLL_NOTCHES",
    "MAX_TEXT_CHARS",
    "MAX_WAIT_SECONDS",
    "RESOLUTIONS",
    "Action",
    "BrowserError",
    "BrowserInfo",
    "BrowserPlane",
    "BrowserProgramUnavailable",
    "BrowserUnavailable",
    "InvalidAction",
    "PageFailed",
    "Screenshot",
    "action_schema",
    "parse_action",
]
