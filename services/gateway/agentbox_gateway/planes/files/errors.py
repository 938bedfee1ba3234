"""The file plane's one error, with the fields aiod reports to agents: ``errno``, ``errno_name``,
``error_type``, ``exception_type``, ``message`` (``Failed to read file: No such file or directory (os
error 2)``), ``operation``, ``path``, ``retryable``. OS errors, decoding errors and refused arguments
all become a :class:`FileOperationError`, of the subclass of its :class:`FileErrorType`'s kind (the
doors write the fields out and read the type; this module builds no wire shape)."""

from __future__ import annotations

import enum
import errno as errno_codes
import os
import re
from collections.abc import Callable
from typing import TypeVar

from agentbox_common.errors import Conflict, Denied, ErrorKind, Invalid, LimitReached, NotFound, PlaneError, TooLarge

T = TypeVar("T")

VERBS = {
    "read": "read file",
    "write": "write file",
    "replace": "replace in file",
    "search": "search file",
    "find": "find files",
    "list": "list directory",
    "grep": "grep files",
    "glob": "glob files",
    "upload": "upload file",
    "download": "download file",
    "stat": "stat path",
    "mkdir": "create directory",
    "copy": "copy path",
    "move": "move path",
    "delete": "delete path",
    "export": "export tree",
    "import": "import tree",
}


class FileErrorType(enum.StrEnum):
    """aiod's ``error_type``, finer than the error kinds: each type has one error class, whose
    :class:`ErrorKind` is the type's (:attr:`kind`); both doors write the type out as it is, REST
    answers a download's failure with its status."""

    NOT_FOUND = "not_found"
    PERMISSION_DENIED = "permission_denied"
    ALREADY_EXISTS = "already_exists"
    INVALID_PATH = "invalid_path"
    INVALID_TARGET = "invalid_target"
    BAD_REQUEST = "bad_request"
    DECODE_ERROR = "decode_error"
    TOO_LARGE = "too_large"
    NO_SPACE_LEFT = "no_space_left"
    IO_ERROR = "io_error"
    #: ``/v2/fs/download`` with ``change_policy=abort``: the file is not the version pinned.
    FILE_CHANGED = "file_changed"

    @property
    def kind(self) -> ErrorKind:
        return _CLASS_OF_TYPE[self].kind


_ERROR_TYPES = {
    errno_codes.ENOENT: FileErrorType.NOT_FOUND,
    errno_codes.EACCES: FileErrorType.PERMISSION_DENIED,
    errno_codes.EPERM: FileErrorType.PERMISSION_DENIED,
    errno_codes.EROFS: FileErrorType.PERMISSION_DENIED,
    errno_codes.EEXIST: FileErrorType.ALREADY_EXISTS,
    errno_codes.ENOTEMPTY: FileErrorType.ALREADY_EXISTS,
    errno_codes.ENOTDIR: FileErrorType.INVALID_PATH,
    errno_codes.ENAMETOOLONG: FileErrorType.INVALID_PATH,
    errno_codes.ELOOP: FileErrorType.INVALID_PATH,
    errno_codes.EISDIR: FileErrorType.INVALID_TARGET,
    errno_codes.EINVAL: FileErrorType.BAD_REQUEST,
    errno_codes.ENOSPC: FileErrorType.NO_SPACE_LEFT,
    errno_codes.EDQUOT: FileErrorType.NO_SPACE_LEFT,
    errno_codes.EFBIG: FileErrorType.TOO_LARGE,
}


#: Transient conditions worth a retry; everything else fails the same way again.
_RETRYABLE = {
    errno_codes.EAGAIN,
    errno_codes.EINTR,
    errno_codes.EBUSY,
    errno_codes.ETIMEDOUT,
    errno_codes.EMFILE,
    errno_codes.ENFILE,
    errno_codes.ENOMEM,
    errno_codes.ETXTBSY,
}


class FileOperationError(PlaneError):
    """A file operation that failed; ``error_type`` is aiod's finer name for what went wrong."""

    def __init__(
        self,
        *,
        operation: str,
        path: str,
        message: str,
        error_type: FileErrorType,
        exception_type: str,
        errno: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.path = path
        self.error_type = error_type
        self.exception_type = exception_type
        self.errno = errno
        self.retryable = retryable

    @property
    def errno_name(self) -> str | None:
        return None if self.errno is None else errno_codes.errorcode.get(self.errno)

    @classmethod
    def from_os_error(cls, exc: OSError, operation: str, path: str) -> FileOperationError:
        code = exc.errno
        if code is None:
            return cls.invalid(operation, path, str(exc), FileErrorType.BAD_REQUEST, type(exc).__name__)
        error_type = _ERROR_TYPES.get(code, FileErrorType.IO_ERROR)
        return _CLASS_OF_TYPE[error_type](
            operation=operation,
            path=path,
            message=f"Failed to {VERBS[operation]}: {os.strerror(code)} (os error {code})",
            error_type=error_type,
            exception_type=type(exc).__name__,
            errno=code,
            retryable=code in _RETRYABLE,
        )

    @classmethod
    def from_errno(cls, code: int, operation: str, path: str) -> FileOperationError:
        """The error an OS call would raise with ``code`` (``OSError`` picks the subclass)."""
        return cls.from_os_error(OSError(code, os.strerror(code)), operation, path)

    @classmethod
    def invalid(
        cls,
        operation: str,
        path: str,
        detail: str,
        error_type: FileErrorType = FileErrorType.BAD_REQUEST,
        exception_type: str = "ValueError",
    ) -> FileOperationError:
        """A request the plane refuses before touching the disk (bad argument, bad path ...)."""
        return _CLASS_OF_TYPE[error_type](
            operation=operation,
            path=path,
            message=f"Failed to {VERBS[operation]}: {detail}",
            error_type=error_type,
            exception_type=exception_type,
        )


class FileRequestInvalid(Invalid, FileOperationError):
    """A bad argument or path, a target of the wrong type, text that is not UTF-8."""


class FileAccessRefused(Denied, FileOperationError):
    """The file system's permissions refuse the operation (``EACCES``, ``EPERM``, ``EROFS``)."""


class FileNotFound(NotFound, FileOperationError): ...


class FileExists(Conflict, FileOperationError): ...


class FileTooLarge(TooLarge, FileOperationError): ...


class NoSpaceLeft(LimitReached, FileOperationError): ...


class FileChangedMidTransfer(Conflict, FileOperationError):
    """The file is not the version a download pinned (``change_policy=abort``)."""


#: The class of each ``error_type``, whose kind is the type's (``io_error``'s the plain failure).
_CLASS_OF_TYPE: dict[FileErrorType, type[FileOperationError]] = {
    FileErrorType.NOT_FOUND: FileNotFound,
    FileErrorType.PERMISSION_DENIED: FileAccessRefused,
    FileErrorType.ALREADY_EXISTS: FileExists,
    FileErrorType.INVALID_PATH: FileRequestInvalid,
    FileErrorType.INVALID_TARGET: FileRequestInvalid,
    FileErrorType.BAD_REQUEST: FileRequestInvalid,
    FileErrorType.DECODE_ERROR: FileRequestInvalid,
    FileErrorType.TOO_LARGE: FileTooLarge,
    FileErrorType.NO_SPACE_LEFT: NoSpaceLeft,
    FileErrorType.IO_ERROR: FileOperationError,
    FileErrorType.FILE_CHANGED: FileChangedMidTransfer,
}


def resolve_path(path: str, operation: str) -> str:
    """An absolute path (``~`` expanded); empty, relative or NUL-containing paths are refused."""
    if not path:
        raise FileOperationError.invalid(operation, path, "path is empty", FileErrorType.INVALID_PATH)
    if "\x00" in path:
        raise FileOperationError.invalid(operation, path, "path contains a NUL byte", FileErrorType.INVALID_PATH)
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        raise FileOperationError.invalid(
            operation, path, f"path must be absolute (start with / or ~): {path}", FileErrorType.INVALID_PATH
        )
    return expanded


def guarded(operation: str, path: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` and turn OS and decoding failures into :class:`FileOperationError`."""
    try:
        return fn()
    except FileOperationError:
        raise
    except UnicodeDecodeError:
        raise FileOperationError.invalid(
            operation,
            path,
            'stream did not contain valid UTF-8 (read it with encoding "base64" or "raw")',
            FileErrorType.DECODE_ERROR,
            "UnicodeDecodeError",
        ) from None
    except OSError as exc:
        raise FileOperationError.from_os_error(exc, operation, path) from None


def compile_pattern(pattern: str, operation: str, path: str, flags: int = 0, literal: bool = False) -> re.Pattern[str]:
    try:
        return re.compile(re.escape(pattern) if literal else pattern, flags)
    except re.error as exc:
        raise FileOperationError.invalid(operation, path, f"invalid regular expression: {exc}") from None
