"""Typed shell errors, so each door (MCP tool, REST route) can map them to its own error shape."""


class ShellError(Exception):
    """A shell request that cannot be served; each door maps the subclass to its own error shape."""


class SessionNotFound(ShellError):
    pass


class CommandNotFound(ShellError):
    pass


class SessionExists(ShellError):
    pass


class SessionBusy(ShellError):
    pass


class SessionLimit(ShellError):
    pass


class InvalidRequest(ShellError):
    pass


class ShellUnavailable(ShellError):
    pass
