"""The file plane's one error, with the fields aiod reports to agents: ``errno``, ``errno_name``,
``error_type``, ``exception_type``, ``message`` (``Failed to read file: No such file or directory (os
error 2)``), ``operation``, ``path``, ``retryable``. OS errors, decoding errors and refused arguments
all become a :class:`FileOperationError`, of the subclass whose :class:`ErrorKind` fits its
``error_type`` (the doors write the fields out; this module builds no wire shape)."""

from __future__ import annotations

import errno as errno_codes
import os
import re
from collections.abc import Callable
from typing import TypeVar

from agentbox_common.errors import Conflict, Invalid, LimitReached, NotFound, PlaneError, TooLarge

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
}


_ERROR_TYPES = {
    errno_codes.ENOENT: "not_found",
    errno_codes.EACCES: "permission_denied",
    errno_codes.EPERM: "permission_denied",
    errno_codes.EROFS: "permission_denied",
    errno_codes.EEXIST: "already_exists",
    errno_codes.ENOTDIR: "invalid_path",
    errno_codes.ENAMETOOLONG: "invalid_path",
    errno_codes.ELOOP: "invalid_path",
    errno_codes.EISDIR: "invalid_target",
    errno_codes.EINVAL: "bad_request",
    errno_codes.ENOSPC: "no_space_left",
    errno_codes.EDQUOT: "no_space_left",
    errno_codes.EFBIG: "too_large",
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
        error_type: str,
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
            return cls.invalid(operation, path, str(exc), "bad_request", type(exc).__name__)
        error_type = _ERROR_TYPES.get(code, "io_error")
        return _CLASSES.get(error_type, FileOperationError)(
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
        error_type: str = "bad_request",
        exception_type: str = "ValueError",
    ) -> FileOperationError:
        """A request the plane refuses before touching the disk (bad argument, bad path ...)."""
        return _CLASSES.get(error_type, FileRequestInvalid)(
            operation=operation,
            path=path,
            message=f"Failed to {VERBS[operation]}: {detail}",
            error_type=error_type,
            exception_type=exception_type,
        )


class FileRequestInvalid(Invalid, FileOperationError):
    """A bad argument or path, a target of the wrong type, text that is not UTF-8, no permission."""


class FileNotFound(NotFound, FileOperationError): ...


class FileExists(Conflict, FileOperationError): ...


class FileTooLarge(TooLarge, FileOperationError): ...


class NoSpaceLeft(LimitReached, FileOperationError): ...


#: The error class of each ``error_type``; ``io_error`` (and anything unlisted) stays a plain failure.
_CLASSES: dict[str, type[FileOperationError]] = {
    "not_found": FileNotFound,
    "permission_denied": FileRequestInvalid,
    "already_exists": FileExists,
    "invalid_path": FileRequestInvalid,
    "invalid_target": FileRequestInvalid,
    "bad_request": FileRequestInvalid,
    "decode_error": FileRequestInvalid,
    "too_large": FileTooLarge,
    "no_space_left": NoSpaceLeft,
}


def resolve_path(path: str, operation: str) -> str:
    """An absolute path (``~`` expanded); empty, relative or NUL-containing paths are refused."""
    if not path:
        raise FileOperationError.invalid(operation, path, "path is empty", "invalid_path")
    if "\x00" in path:
        raise FileOperationError.invalid(operation, path, "path contains a NUL byte", "invalid_path")
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded):
        raise FileOperationError.invalid(
            operation, path, f"path must be absolute (start with / or ~): {path}", "invalid_path"
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
            "decode_error",
            "UnicodeDecodeError",
        ) from None
    except OSError as exc:
        raise FileOperationError.from_os_error(exc, operation, path) from None


def compile_pattern(pattern: str, operation: str, path: str, flags: int = 0, literal: bool = False) -> re.Pattern[str]:
    try:
        return re.compile(re.escape(pattern) if literal else pattern, flags)
    except re.error as exc:
        raise FileOperationError.invalid(operation, path, f"invalid regular expression: {exc}") from None
