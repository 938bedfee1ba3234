"""The planes' errors take their kind from the kind class they derive from, before their plane's base
(a plane error of another kind is still its plane's error), so a door can also catch a kind by class."""

from __future__ import annotations

import pytest

from agentbox_common.errors import (
    Conflict,
    ErrorKind,
    Invalid,
    LimitReached,
    NotFound,
    PlaneError,
    TimedOut,
    TooLarge,
    Unavailable,
)
from agentbox_gateway.planes.code.errors import CodeError, SessionLimitReached
from agentbox_gateway.planes.files import FileExists, FileOperationError, FileTooLarge, NoSpaceLeft, WatchTimeout
from agentbox_gateway.planes.shell.errors import SessionNotFound, ShellError, ShellUnavailable
from agentbox_gateway.upstreams.client import UpstreamTimeout, UpstreamUnavailable


@pytest.mark.parametrize(
    ("error", "kind_class", "kind"),
    [
        (Invalid, Invalid, ErrorKind.INVALID),
        (NotFound, NotFound, ErrorKind.NOT_FOUND),
        (Conflict, Conflict, ErrorKind.CONFLICT),
        (LimitReached, LimitReached, ErrorKind.LIMIT),
        (TooLarge, TooLarge, ErrorKind.TOO_LARGE),
        (Unavailable, Unavailable, ErrorKind.UNAVAILABLE),
        (TimedOut, TimedOut, ErrorKind.TIMEOUT),
        (ShellError, Invalid, ErrorKind.INVALID),
        (SessionNotFound, NotFound, ErrorKind.NOT_FOUND),
        (ShellUnavailable, Unavailable, ErrorKind.UNAVAILABLE),
        (SessionLimitReached, LimitReached, ErrorKind.LIMIT),
        (FileExists, Conflict, ErrorKind.CONFLICT),
        (FileTooLarge, TooLarge, ErrorKind.TOO_LARGE),
        (NoSpaceLeft, LimitReached, ErrorKind.LIMIT),
        (WatchTimeout, TimedOut, ErrorKind.TIMEOUT),
        (UpstreamTimeout, TimedOut, ErrorKind.TIMEOUT),
    ],
)
def test_kind_comes_from_the_kind_class(error: type[PlaneError], kind_class: type[PlaneError], kind: ErrorKind) -> None:
    assert error.kind is kind
    assert issubclass(error, kind_class)


def test_a_plane_error_of_another_kind_is_still_its_planes_error() -> None:
    assert issubclass(SessionNotFound, ShellError)
    assert issubclass(SessionLimitReached, CodeError)
    assert issubclass(UpstreamTimeout, UpstreamUnavailable)
    assert FileOperationError.kind is ErrorKind.FAILED
    assert PlaneError.kind is ErrorKind.FAILED
