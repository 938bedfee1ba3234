"""The shell plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import ErrorKind, PlaneError


class ShellError(PlaneError):
    """A shell request that cannot be served."""

    kind = ErrorKind.INVALID


class SessionNotFound(ShellError):
    kind = ErrorKind.NOT_FOUND


class CommandNotFound(ShellError):
    kind = ErrorKind.NOT_FOUND


class SessionExists(ShellError):
    kind = ErrorKind.CONFLICT


class SessionBusy(ShellError):
    kind = ErrorKind.CONFLICT


class SessionLimit(ShellError):
    kind = ErrorKind.LIMIT


class InvalidRequest(ShellError):
    kind = ErrorKind.INVALID


class ShellUnavailable(ShellError):
    kind = ErrorKind.UNAVAILABLE
