"""The planes' errors take their kind from the kind class they derive from, before their plane's base
(a plane error of another kind is still its plane's error), so a door can also catch a kind by class."""

from __future__ import annotations

import errno

import pytest

from agentbox_browser.page.errors import ConditionTimedOut, PageTimedOut
from agentbox_common.errors import (
    Conflict,
    Denied,
    ErrorKind,
    Expired,
    Invalid,
    LimitReached,
    NotFound,
    PlaneError,
    TimedOut,
    TooLarge,
    Unavailable,
)
from agentbox_common.http_status import HTTP_STATUS
from agentbox_common.http_status import http_status as status_of
from agentbox_common.workspace_files import FileAccessDenied
from agentbox_gateway.doors.rest.files import FINER_STATUS, http_status
from agentbox_gateway.planes.code.errors import CodeError, SessionLimitReached
from agentbox_gateway.planes.files import (
    FileAccessRefused,
    FileErrorType,
    FileExists,
    FileNotFound,
    FileOperationError,
    FileTooLarge,
    NoSpaceLeft,
    WatchTimeout,
)
from agentbox_gateway.planes.shell.errors import SessionNotFound, ShellError, ShellUnavailable
from agentbox_gateway.upstreams.client import UpstreamTimeout, UpstreamUnavailable
from agentbox_mcp_mode.api_mode.errors import http_status as api_mode_status


@pytest.mark.parametrize(
    ("error", "kind_class", "kind"),
    [
        (Invalid, Invalid, ErrorKind.INVALID),
        (NotFound, NotFound, ErrorKind.NOT_FOUND),
        (Denied, Denied, ErrorKind.DENIED),
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
        (FileAccessRefused, Denied, ErrorKind.DENIED),
        (FileAccessDenied, Denied, ErrorKind.DENIED),
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


def test_every_kind_has_one_http_status() -> None:
    assert set(HTTP_STATUS) == set(ErrorKind)
    assert HTTP_STATUS[ErrorKind.DENIED] == 403


#: aiod's v2 status of each file error type (what download answers), the REST door's vocabulary.
AIOD_STATUS = {
    "not_found": 404,
    "permission_denied": 403,
    "already_exists": 409,
    "bad_request": 400,
    "invalid_path": 400,
    "invalid_target": 400,
    "decode_error": 422,
    "too_large": 413,
    "no_space_left": 507,
    "io_error": 500,
    "file_changed": 409,
}


@pytest.mark.parametrize("error_type", list(FileErrorType))
def test_a_file_error_type_has_the_kind_of_its_rest_status(error_type: FileErrorType) -> None:
    """The plane's kinds and the REST door's statuses are one vocabulary: a type's kind answers
    aiod's status, unless that status is finer than any kind (422, 507)."""
    assert http_status(error_type) == AIOD_STATUS[error_type.value]
    if error_type not in FINER_STATUS:
        assert HTTP_STATUS[error_type.kind] == AIOD_STATUS[error_type.value]
    assert set(FINER_STATUS.values()).isdisjoint(HTTP_STATUS.values())


@pytest.mark.parametrize(
    ("code", "error_class", "kind"),
    [
        (errno.EACCES, FileAccessRefused, ErrorKind.DENIED),
        (errno.EROFS, FileAccessRefused, ErrorKind.DENIED),
        (errno.ENOENT, FileNotFound, ErrorKind.NOT_FOUND),
        (errno.EIO, FileOperationError, ErrorKind.FAILED),
    ],
)
def test_an_os_error_becomes_the_class_of_its_type_s_kind(code: int, error_class: type, kind: ErrorKind) -> None:
    error = FileOperationError.from_errno(code, "read", "/x")
    assert type(error) is error_class and error.kind is kind is error.error_type.kind


def test_a_decoding_error_is_invalid_with_its_own_type() -> None:
    error = FileOperationError.invalid("read", "/x", "not UTF-8", FileErrorType.DECODE_ERROR)
    assert error.kind is ErrorKind.INVALID and error.error_type == "decode_error"


def test_api_mode_answers_a_refused_file_by_its_kind() -> None:
    assert api_mode_status(FileAccessDenied("permission denied: x")) == 403


def test_an_awaited_condition_that_did_not_come_true_is_408_not_504() -> None:
    assert issubclass(WatchTimeout, Expired) and WatchTimeout.kind is ErrorKind.TIMEOUT
    assert status_of(WatchTimeout("no event")) == status_of(ConditionTimedOut("not loaded")) == 408
    assert status_of(PageTimedOut("did not finish")) == 504
