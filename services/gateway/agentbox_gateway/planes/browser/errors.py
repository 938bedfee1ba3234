"""The browser plane's typed errors, mapped by the doors onto isError texts and HTTP statuses."""

from __future__ import annotations


class BrowserUnavailable(Exception):
    """Chromium's DevTools endpoint cannot be reached (not started, restarting, wrong address)."""


class BrowserError(Exception):
    """Chromium is reachable but the operation failed (protocol error, hung page, timeout)."""


class InvalidAction(ValueError):
    """A GUI action or setting was rejected before anything was sent to the browser."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
