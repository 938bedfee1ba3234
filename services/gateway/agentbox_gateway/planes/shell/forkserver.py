"""The shell plane's fork server, a small process of its own (``python -I -S forkserver.py``, stdlib
only) that starts the shells for the gateway.

A shell must be a child subreaper, which only a ``preexec_fn`` can make it, and a ``preexec_fn``
rules out ``vfork``: the gateway would fork its whole heap in its event loop and wait there until
bash is executed (some 6 ms for each new session, profiled). This process is small, forks in its own
time, and leaves the gateway a request and an answer on a socket.

The protocol, on a ``SOCK_SEQPACKET`` socket at fd 0, one packet per message: a request is JSON
``{"argv", "cwd", "env"}`` with the child's stdin, stdout and stderr attached (``SCM_RIGHTS``); it is
answered, in order, ``S <pid>`` once the child runs ``argv[0]`` or ``E <errno> <text>``. When a child
ends, ``X <pid> <returncode>`` (negative: killed by that signal). End of file on fd 0 ends the server."""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import struct

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
#: What Python or this server changed and a shell must not inherit (``exec`` keeps ignored signals).
_RESET_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGCHLD)


def _child(argv: list[str], cwd: str, env: dict[str, str], fds: list[int], report: int) -> None:
    """In the forked child: become a session leader and a subreaper with ``fds`` as 0, 1, 2 in ``cwd``,
    then run ``argv``; on failure write the errno to ``report`` (close-on-exec)."""
    try:
        os.setsid()
        if _prctl is not None:
            _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        for sig in _RESET_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, report)
        os.closerange(report + 1, os.sysconf("SC_OPEN_MAX"))
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    except Exception as exc:  # whatever it was, the gateway is told
        errno = getattr(exc, "errno", None) or 0
        os.write(report, struct.pack("i", errno) + str(exc).encode(errors="replace"))
    finally:
        os._exit(127)


def _spawn(server: socket.socket, request: bytes, fds: list[int]) -> None:
    try:
        if len(fds) != 3:
            raise ValueError(f"{len(fds)} descriptors given, not 3")
        spec = json.loads(request)
        report_read, report_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            _child(spec["argv"], spec["cwd"], spec["env"], fds, report_write)
        os.close(report_write)
        with os.fdopen(report_read, "rb") as report:
            failure = report.read()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        server.send(f"E 0 {exc}".encode(errors="replace"))
        return
    finally:
        for fd in fds:
            os.close(fd)
    if failure:  # the child wrote why it could not run argv, and exited
        os.waitpid(pid, 0)
        errno = struct.unpack("i", failure[:4])[0]
        server.send(f"E {errno} ".encode() + failure[4:])
    else:
        server.send(f"S {pid}".encode())


def _reap(server: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        server.send(f"X {pid} {os.waitstatus_to_exitcode(status)}".encode())


def main() -> None:
    if _prctl is not None:  # as the gateway is: sandbox commands of its user may not ptrace it
        _prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the gateway's to handle
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    server = socket.socket(fileno=0)
    while True:
        ready, _, _ = select.select([server.fileno(), wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 512)
            _reap(server)
        if server.fileno() in ready:
            request, fds, _, _ = socket.recv_fds(server, 1 << 20, 3)
            if not request:
                return
            _spawn(server, request, fds)


if __name__ == "__main__":
    main()
