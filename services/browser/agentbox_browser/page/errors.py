"""The page plane's typed error."""

from __future__ import annotations


class PageError(Exception):
    """An operation refused or failed for a reason the caller can act on, with its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
