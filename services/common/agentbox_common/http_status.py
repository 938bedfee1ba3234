"""The HTTP status each kind of plane error is answered with: one table for every REST door (the
gateway's ``/v1/*``, aicodebox's API mode), so a kind means the same status everywhere. A route
whose contract says otherwise answers its errors itself."""

from __future__ import annotations

from .errors import ErrorKind, Expired, PlaneError

__all__ = ["HTTP_STATUS", "http_status"]

HTTP_STATUS: dict[ErrorKind, int] = {
    ErrorKind.INVALID: 400,
    ErrorKind.DENIED: 403,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.CONFLICT: 409,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.LIMIT: 429,
    ErrorKind.FAILED: 500,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.TIMEOUT: 504,
}


def http_status(error: PlaneError) -> int:
    """``error``'s status: its kind's, but 408 for an awaited condition that did not come true
    (:class:`~.errors.Expired`), finer than the 504 of an operation that did not finish."""
    return 408 if isinstance(error, Expired) else HTTP_STATUS[error.kind]
