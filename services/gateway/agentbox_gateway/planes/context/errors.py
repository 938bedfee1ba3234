"""The context plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import Invalid, NotFound, Unavailable


class ContextError(Invalid):
    """A context request that cannot be answered (no such language, bad skill name ...)."""


class ListingToolUnavailable(Unavailable, ContextError):
    """The interpreter or package manager a listing needs is missing, fails or does not answer."""


class SkillNotFound(NotFound, ContextError): ...


class InvalidSkill(ContextError):
    """A skill, archive or name that cannot be registered or loaded; nothing was changed."""
