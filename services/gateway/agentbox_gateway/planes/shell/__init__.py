"""The shell plane: persistent bash sessions shared by ``sandbox_execute_bash`` and ``/v1/shell``,
``/v1/bash``.

Modules: ``plane`` (the session registry and its API), ``session`` (one session and its bash),
``bash`` (what is written to bash and the end markers read back), ``spawner`` and ``forkserver``
(shells started by a small process of their own, not by forking the gateway), ``processes`` (what a
kill hits), ``record`` (one command), ``detached`` (apps that outlive sessions), ``output`` (bounded
output buffers), ``terminal`` (interactive PTY shells for people), ``pty`` (named terminals that
outlive their sockets, ``/v2/pty``), ``history`` (a terminal's retained output), ``errors``."""

from .bash import bash_quote, resolve_dir
from .detached import DetachedApp
from .errors import (
    CommandNotFound,
    InvalidRequest,
    SessionBusy,
    SessionExists,
    SessionLimit,
    SessionNotFound,
    ShellError,
    ShellUnavailable,
)
from .output import OUTPUT_LIMIT, OutputBuffer, truncate_middle
from .plane import DEFAULT_SESSION_ID, DEFAULT_TOOL_TIMEOUT, SessionStats, ShellPlane
from .pty import Attachment, AttachStart, ExecResult, PtyLimits, PtySession, PtySessions, Screen
from .record import CommandRecord
from .session import ShellSession
from .terminal import Terminal, Terminals

__all__ = [
    "DEFAULT_SESSION_ID",
    "DEFAULT_TOOL_TIMEOUT",
    "OUTPUT_LIMIT",
    "AttachStart",
    "Attachment",
    "CommandNotFound",
    "CommandRecord",
    "DetachedApp",
    "ExecResult",
    "InvalidRequest",
    "OutputBuffer",
    "PtyLimits",
    "PtySession",
    "PtySessions",
    "Screen",
    "SessionBusy",
    "SessionExists",
    "SessionLimit",
    "SessionNotFound",
    "SessionStats",
    "ShellError",
    "ShellPlane",
    "ShellSession",
    "ShellUnavailable",
    "Terminal",
    "Terminals",
    "bash_quote",
    "resolve_dir",
    "truncate_middle",
]
