"""The context plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import ErrorKind, PlaneError


class ContextError(PlaneError):
    """A context request that cannot be answered (no such language, bad skill name ...)."""

    kind = ErrorKind.INVALID


class RuntimeUnavailable(ContextError):
    """The interpreter or package manager a listing needs is missing, fails or does not answer."""

    kind = ErrorKind.UNAVAILABLE


class SkillNotFound(ContextError):
    kind = ErrorKind.NOT_FOUND


class InvalidSkill(ContextError):
    """A skill, archive or name that cannot be registered or loaded; nothing was changed."""

    kind = ErrorKind.INVALID
