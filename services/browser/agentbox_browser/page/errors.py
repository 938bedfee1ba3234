"""The page plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, and
:func:`as_page_error`, the one place what Playwright, the OS and bad arguments raise becomes one of
them (so the door maps a kind to a status once, and the MCP tools answer the same message)."""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError

from agentbox_common.errors import Conflict, Expired, Invalid, NotFound, PlaneError, TimedOut, Unavailable
from agentbox_common.mcp_tools import ToolError

from ..session import first_line


class PageError(Invalid):
    """An operation refused for a reason the caller can act on (a bad argument, an unknown mode)."""


class PageNotFound(NotFound, PageError):
    """What the operation names is missing: a file, a directory, a route, an option."""


class PageConflict(Conflict, PageError):
    """The page or a recording is in a state that refuses the operation (no history, already running)."""


class PageUnavailable(Unavailable, PageError):
    """What the operation needs is missing: Chromium, or ffmpeg for a recording."""


class PageTimedOut(TimedOut, PageError):
    """The operation did not finish within the page door's deadline."""


class ConditionTimedOut(Expired, PageError):
    """A navigation or a wait ran but its condition (a load state, an event) did not come true in time."""


def as_page_error(exc: Exception, operation: str, connected: bool, deadline: float) -> PlaneError | None:
    """``exc`` as a page error (``None`` for an exception no one foresaw, which stays a crash)."""
    if isinstance(exc, PlaneError):
        return exc
    if isinstance(exc, ToolError):  # a shared tool helper's refusal (a bad URL, a read-only field)
        return PageError(str(exc))
    if isinstance(exc, TimeoutError):  # before OSError, whose subclass it is
        return PageTimedOut(f"{operation} did not finish within {deadline:g} s")
    if isinstance(exc, KeyError | TypeError | ValueError):
        return PageError(f"bad arguments for {operation}: {type(exc).__name__}: {exc}")
    if isinstance(exc, OSError):  # a save path the sandbox user cannot write, a name too long, …
        return PageError(f"{operation} failed: {exc.strerror or exc}")
    if isinstance(exc, PlaywrightError):
        if not connected:
            return PageUnavailable(f"browser unavailable: {first_line(exc)}")
        return PageError(f"{operation} failed: {first_line(exc)}")
    return None
