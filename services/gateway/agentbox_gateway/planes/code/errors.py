"""The code plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it. A cell that ran and failed is no error: it is an ``Execution`` whose status
says so."""

from agentbox_common.errors import Invalid, LimitReached, NotFound, Unavailable


class CodeError(Invalid):
    """A request the plane refuses; the message says why and what to do."""


class UnsupportedLanguage(CodeError):
    """A language the plane does not run (the message lists those it does)."""


class InvalidCodeRequest(CodeError):
    """A bad argument: a timeout out of range, a missing directory, a kernel or version not installed."""


class CodeSessionNotFound(NotFound, CodeError):
    """No session of that id (and language): never made, deleted, or closed after idling."""


class SessionLimitReached(LimitReached, CodeError):
    """Every session slot is taken, and none is an idle one made implicitly (those are evicted)."""


class InterpreterUnavailable(Unavailable, CodeError):
    """The interpreter is not installed or will not start."""
