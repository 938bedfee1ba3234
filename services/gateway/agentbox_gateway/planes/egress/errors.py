"""The egress plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import Invalid, NotFound, Unavailable


class ProxySettingError(Invalid):
    """A setting was refused before anything changed (bad syntax, unknown entry)."""


class ProxyEntryNotFound(NotFound):
    """The mapping or exclude to remove is not set."""


class ProxyUnavailable(Unavailable):
    """The forwarder could not listen, so the browser cannot use the settings."""
