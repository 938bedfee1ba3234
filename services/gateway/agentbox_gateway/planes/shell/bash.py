"""Talking to one bash process: quoting and directories for its input, the init script, the wrapped
command line, and the end markers it prints.

A command is evaluated in the shell itself, inside a ``{ ...; }`` group that gives it its own stdin
(``/dev/null``, or a pipe the caller may write to) and, for the MCP tool and ``/v1/shell``, ``2>&1`` so
output is exactly interleaved. After it, the shell prints an end marker carrying a per-command nonce,
the exit status, ``$PWD`` and its background jobs on stdout (and a second marker on stderr); output is
everything before the markers, so output without a trailing newline and background children that keep
the pipes open never confuse or block a result."""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import cast

from .errors import InvalidRequest, ShellUnavailable
from .spawner import ShellProcess

MARK = b"\0\x1fAB"
MARK_END = b"\x1f\0"

#: The signal that tells a shell to abandon the rest of the running command line.
ABORT_SIGNAL = signal.SIGUSR2

#: Run once in each new shell: job control (own process group per pipeline), aliases as in an
#: interactive shell, the end-of-command reporter, and the abort trap. Every command runs inside a
#: one-pass ``for`` loop, so ``break 1000`` from the trap skips the rest of its line; a trap that fires
#: inside a shell function (which ``break`` cannot leave) kills the shell instead (it is restarted).
INIT = (
    "set -m\n"
    "shopt -s expand_aliases\n"
    '__agentbox_done() { builtin printf \'\\0\\37AB%s\\37%d\\37%s\\37\' "$1" "$2" "$PWD"; '
    "builtin jobs -p; builtin printf '\\37\\0'; builtin printf '\\0\\37AB%s\\37E\\37\\0' \"$1\" >&2; }\n"
    "__agentbox_abort() { [[ -n ${__agentbox_running-} ]] || return 0; "
    "(( ${#FUNCNAME[@]} < 2 )) || builtin kill -9 $$; }\n"
    f"trap '__agentbox_abort; break 1000 2>/dev/null' {ABORT_SIGNAL.name.removeprefix('SIG')}\n"
)


def catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (``SigCgt`` in its ``/proc`` status)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError):
        return False
    return False


def resolve_dir(base: str, path: str) -> str:
    """An absolute, existing, enterable directory for ``cd`` (a relative ``path`` is taken from ``base``)."""
    full = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
    if not os.path.isdir(full):
        raise InvalidRequest(f"directory does not exist: {path}")
    if not os.access(full, os.X_OK):
        raise InvalidRequest(f"permission denied: cannot enter {path}")
    return full


def existing_dir(path: str) -> str:
    """``path`` if it is still a directory, else the home directory (a restarted shell's start)."""
    return path if os.path.isdir(path) else str(Path.home())


def bash_quote(text: str) -> str:
    """``$'...'`` quoting that survives any text on one line (bash decodes the escapes)."""
    out = ["$'"]
    for char in text:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(char)
    out.append("'")
    return "".join(out)


def command_line(
    command: str,
    nonce: str,
    *,
    cwd: str | None,
    env: dict[str, str] | None,
    stdin_path: str | None,
    merged: bool,
    preserve_symlinks: bool | None,
) -> str:
    """The line that runs ``command`` in a one-pass loop (so the abort trap can ``break`` out of it)
    and then reports its end with ``nonce``."""
    parts = []
    if preserve_symlinks is not None:
        parts.append("set +P; " if preserve_symlinks else "set -P; ")
    parts.append(f"__agentbox_cmd={bash_quote(command)} __agentbox_running=1; ")
    parts.append("for __agentbox_once in 1; do { ")
    if cwd:
        parts.append(f"builtin cd -- {bash_quote(cwd)} >/dev/null && ")
    parts.extend(f"{name}={bash_quote(value)} " for name, value in (env or {}).items())
    # Plain ``eval``: ``NAME=value builtin eval`` would not pass NAME on to the command.
    parts.append('eval "$__agentbox_cmd"; } ')
    parts.append(f"<{bash_quote(stdin_path or '/dev/null')}{' 2>&1' if merged else ''}; done; ")
    parts.append(f"__agentbox_rc=$? __agentbox_running=; __agentbox_done {nonce} $__agentbox_rc\n")
    return "".join(parts)


def end_prefix(nonce: str) -> bytes:
    """How the end markers of the command run with ``nonce`` start (on stdout and stderr)."""
    return MARK + nonce.encode() + b"\x1f"


def parse_end(marker: bytes) -> tuple[int | None, str | None, set[int]]:
    """The stdout end marker's payload: exit status, ``$PWD`` and background job process groups."""
    status, _, rest = marker.partition(b"\x1f")
    cwd, _, jobs = rest.rpartition(b"\x1f")
    try:
        exit_code: int | None = int(status)
    except ValueError:
        exit_code = None
    jobs_pgids = {int(pid) for pid in jobs.split() if pid.isdigit()}
    return exit_code, cwd.decode("utf-8", "surrogateescape") or None, jobs_pgids


def partial_marker(buffer: bytes | bytearray, prefix: bytes) -> int:
    """Length of the longest end of ``buffer`` that could be the start of ``prefix``."""
    index = buffer.find(b"\0", max(0, len(buffer) - len(prefix) + 1))
    while index != -1:
        if prefix.startswith(bytes(buffer[index:])):
            return len(buffer) - index
        index = buffer.find(b"\0", index + 1)
    return 0


class BashProtocol(asyncio.SubprocessProtocol):
    """Hands one shell's output and exit to its session (which may have replaced it meanwhile)."""

    def __init__(
        self, shell: BashShell, on_data: Callable[[BashShell, int, bytes], None], on_exit: Callable[[BashShell], None]
    ) -> None:
        self._shell = shell
        self._on_data = on_data
        self._on_exit = on_exit

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._on_data(self._shell, fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._shell.pipe_closed(fd)

    def process_exited(self) -> None:
        self._on_exit(self._shell)


class BashShell:
    """One bash process of a session (a session outlives its shells when one has to be replaced)."""

    def __init__(self) -> None:
        self.transport: ShellProcess | None = None
        self.pid = 0
        self.exited = False
        self.scan = {1: bytearray(), 2: bytearray()}
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in (1, 2)}
        self.prefix = b""
        self.markers: dict[int, bytes | None] = {1: None, 2: None}
        self._open_pipes = {1, 2}
        self.pipes_closed = asyncio.Event()
        self.gone = asyncio.Event()
        #: Its abort trap is installed (it has run :data:`INIT`): found once, true for good.
        self._trapping = False

    @property
    def trapping(self) -> bool:
        """Whether the abort signal would be caught by its trap, not kill it: bash reads :data:`INIT`
        after it starts, and an abort sent before would end the shell (exit 140), not the command."""
        if not self._trapping and self.pid:
            self._trapping = catches(self.pid, ABORT_SIGNAL)
        return self._trapping

    def pipe_closed(self, fd: int) -> None:
        self._open_pipes.discard(fd)
        if not self._open_pipes:
            self.pipes_closed.set()

    def decode(self, fd: int, data: bytes, final: bool = False) -> str:
        return self.decoders[fd].decode(data, final)

    def pause_output(self, paused: bool) -> None:
        """Stop (or resume) reading the shell's stdout and stderr: a full pipe then holds the
        command's writes until a slow reader of its output catches up."""
        if self.transport is None or self.exited:
            return
        for fd in (1, 2):
            # A read pipe (uvloop's transports are not asyncio's classes, so no isinstance check).
            pipe = cast(asyncio.ReadTransport | None, self.transport.get_pipe_transport(fd))
            if pipe is not None and not pipe.is_closing():
                if paused:
                    pipe.pause_reading()
                else:
                    pipe.resume_reading()

    def write(self, text: str) -> None:
        assert self.transport is not None
        pipe = cast(asyncio.WriteTransport | None, self.transport.get_pipe_transport(0))
        if pipe is None or pipe.is_closing():
            raise ShellUnavailable("the shell's input is closed")
        pipe.write(text.encode("utf-8", "surrogateescape"))
