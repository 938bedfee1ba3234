"""The browser plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it (REST: the envelope with the kind's status; MCP: an ``isError`` text)."""

from __future__ import annotations

from typing import ClassVar

from agentbox_common.errors import Invalid, PlaneError, Unavailable


class BrowserError(PlaneError):
    """Chromium is reachable but the operation failed (protocol error, hung page, timeout)."""


class BrowserUnavailable(Unavailable):
    """Chromium's DevTools endpoint cannot be reached (not started, restarting, wrong address).

    The message is what is missing, the hint (and ``str()``, which callers quote) the cause."""

    summary: ClassVar[str] = "Browser unavailable: no reachable CDP port"

    def __init__(self, cause: str) -> None:
        super().__init__(self.summary, hint=cause)
        self.cause = cause

    def __str__(self) -> str:
        return self.cause


class BrowserProgramUnavailable(BrowserUnavailable):
    """The browser program (Playwright, the page operations) does not answer on its page door."""

    summary = "Browser unavailable: the browser program does not answer"


class BrowserDidNotStart(BrowserUnavailable):
    """A call waited for the browser to start (``BROWSER_START_MODE``) and it did not answer in time."""

    summary = "Browser unavailable: it did not start in time"


class InvalidAction(Invalid):
    """A GUI action or setting was rejected before anything was sent to the browser; ``detail``
    says what is wrong with ``field``."""

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(f"Invalid action: {detail}")
        self.detail = detail
        self.field = field


class PageFailed(PlaneError):
    """The browser program refused or failed a page operation; ``status`` is the HTTP status it
    answered (its refusals are passed on by the REST door as they are)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
