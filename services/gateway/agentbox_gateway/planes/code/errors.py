"""The code plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it. A cell that ran and failed is no error: it is an :class:`Execution` whose
status says so."""

from agentbox_common.errors import ErrorKind, PlaneError


class CodeError(PlaneError):
    """A request the plane refuses; the message says why and what to do."""

    kind = ErrorKind.INVALID


class UnsupportedLanguage(CodeError):
    kind = ErrorKind.INVALID


class InvalidRequest(CodeError):
    kind = ErrorKind.INVALID


class SessionNotFound(CodeError):
    kind = ErrorKind.NOT_FOUND


class SessionLimitReached(CodeError):
    kind = ErrorKind.LIMIT


class RuntimeUnavailable(CodeError):
    """The interpreter is not installed or will not start."""

    kind = ErrorKind.UNAVAILABLE
