"""The proxy plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it."""

from agentbox_common.errors import ErrorKind, PlaneError


class ProxySettingError(PlaneError):
    """A setting was refused before anything changed (bad syntax, unknown entry)."""

    kind = ErrorKind.INVALID


class ProxyEntryNotFound(PlaneError):
    """The mapping or exclude to remove is not set."""

    kind = ErrorKind.NOT_FOUND


class ProxyUnavailable(PlaneError):
    """The forwarder could not listen, so the browser cannot use the settings."""

    kind = ErrorKind.UNAVAILABLE
