"""The shell plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import Conflict, Denied, Invalid, LimitReached, NotFound, TooLarge, Unavailable


class ShellError(Invalid):
    """A shell request that cannot be served."""


class SessionNotFound(NotFound, ShellError): ...


class CommandNotFound(NotFound, ShellError): ...


class SessionExists(Conflict, ShellError): ...


class SessionBusy(Conflict, ShellError): ...


class SessionLimit(LimitReached, ShellError): ...


class CommandLimit(LimitReached, ShellError): ...


class InvalidRequest(ShellError): ...


class ShellUnavailable(Unavailable, ShellError): ...


class ProgramNotFound(NotFound, ShellError):
    """An unknown program number, or a program (or its working directory) that does not exist."""


class ProgramDenied(Denied, ShellError): ...


class NoTerminal(Conflict, ShellError):
    """A terminal operation on a program that has none (or has ended)."""


class StdinClosed(Conflict, ShellError):
    """Input for a program whose stdin was closed, or that no longer reads it."""


class OutputTooLarge(TooLarge, ShellError): ...


class ProgramUnavailable(Unavailable, ShellError): ...
