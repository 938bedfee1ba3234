"""The planes' one error vocabulary: every error a plane raises is a :class:`PlaneError` of one
:class:`ErrorKind`, and each door maps the kind once (REST: an HTTP status,
:func:`~agentbox_common.http_status.http_status`; MCP: an ``isError`` result in the tool registry).
A plane names what went wrong; it never picks a status code or builds a wire shape.

The tree (each kind's class, then the planes' errors of that kind; REST's status on the right)::

    PlaneError                  FAILED       500  FileOperationError (io_error), BrowserError
    ├── Invalid                 INVALID      400  ShellError, CodeError, ContextError, PageError,
    │                                             FileProblem, FileRequestInvalid, InvalidAction
    ├── NotFound                NOT_FOUND    404  FileNotFound, SkillNotFound, PageNotFound, ...
    ├── Denied                  DENIED       403  FileAccessRefused, FileAccessDenied
    ├── Conflict                CONFLICT     409  FileExists, SessionExists, SessionBusy, PageConflict
    ├── LimitReached            LIMIT        429  SessionLimit, NoSpaceLeft, DiskFull
    ├── TooLarge                TOO_LARGE    413  FileTooLarge, WorkspaceFileTooLarge
    ├── Unavailable             UNAVAILABLE  503  BrowserUnavailable, ChromiumUnavailable, ...
    └── TimedOut                TIMEOUT      504  UpstreamTimeout, PageTimedOut
        └── Expired             TIMEOUT      408  WatchTimeout, ConditionTimedOut

A plane declares its errors by kind, deriving from the kind's class; where a plane error of one
kind is also its plane's error, the kind comes first among the bases, so it is the one found
(``class SessionNotFound(NotFound, ShellError)``, where ``ShellError`` is an :class:`Invalid`).
A route whose contract fixes other statuses (a file failure is ``200 success:false``; aiod's
download answers 422 and 507) reads the finer field its plane keeps, never a status.
"""

from __future__ import annotations

import enum
from typing import ClassVar

__all__ = [
    "Conflict",
    "Denied",
    "ErrorKind",
    "Expired",
    "Invalid",
    "LimitReached",
    "NotFound",
    "PlaneError",
    "TimedOut",
    "TooLarge",
    "Unavailable",
]


class ErrorKind(enum.Enum):
    """What a caller can do about an error, which is all a door needs to answer it."""

    #: The request is wrong (a bad argument, an unsupported option): fix it and retry.
    INVALID = "invalid"
    #: What the request names does not exist (a session, a file, a skill).
    NOT_FOUND = "not_found"
    #: The caller may not do this (the file system's permissions): asking again will not help.
    DENIED = "denied"
    #: The target is in a state that refuses the request (busy, already exists).
    CONFLICT = "conflict"
    #: A configured limit is reached (sessions, watches, concurrent runs): retry later.
    LIMIT = "limit"
    #: The input or the answer is larger than the plane accepts.
    TOO_LARGE = "too_large"
    #: What the plane needs (a browser, an interpreter, an upstream) does not answer.
    UNAVAILABLE = "unavailable"
    #: The operation did not finish in its time.
    TIMEOUT = "timeout"
    #: The operation ran and failed.
    FAILED = "failed"


class PlaneError(Exception):
    """An error a plane raises on purpose; its message is written for the caller (and the model).

    ``hint`` is an optional second line: what to try, or the cause behind a short message."""

    kind: ClassVar[ErrorKind] = ErrorKind.FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __init_subclass__(cls, kind: ErrorKind | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if kind is not None:
            cls.kind = kind


# One class a kind (what ErrorKind's members say), for a plane error to derive from.
class Invalid(PlaneError, kind=ErrorKind.INVALID): ...


class NotFound(PlaneError, kind=ErrorKind.NOT_FOUND): ...


class Denied(PlaneError, kind=ErrorKind.DENIED): ...


class Conflict(PlaneError, kind=ErrorKind.CONFLICT): ...


class LimitReached(PlaneError, kind=ErrorKind.LIMIT): ...


class TooLarge(PlaneError, kind=ErrorKind.TOO_LARGE): ...


class Unavailable(PlaneError, kind=ErrorKind.UNAVAILABLE): ...


class TimedOut(PlaneError, kind=ErrorKind.TIMEOUT): ...


class Expired(TimedOut):
    """The awaited condition did not come true in its time (a wait for an event, a page, a load
    state): the operation itself worked and may be asked again. REST answers it 408, not 504."""
