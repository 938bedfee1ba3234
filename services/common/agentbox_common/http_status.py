"""The HTTP status each kind of plane error is answered with: one table for every REST door (the
gateway's ``/v1/*``, aicodebox's API mode), so a kind means the same status everywhere. A route
whose contract says otherwise answers its errors itself."""

from __future__ import annotations

from .errors import ErrorKind

__all__ = ["HTTP_STATUS"]

HTTP_STATUS: dict[ErrorKind, int] = {
    ErrorKind.INVALID: 400,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.CONFLICT: 409,
    ErrorKind.TOO_LARGE: 413,
    ErrorKind.LIMIT: 429,
    ErrorKind.FAILED: 500,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.TIMEOUT: 504,
}
