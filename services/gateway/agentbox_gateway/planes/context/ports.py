"""Which listening TCP ports are apps (the preview list) and which are the sandbox's own.

A port is the sandbox's own when the gateway's settings name it (:meth:`GatewaySettings.own_ports`:
the gateway, its browser proxy, the browser program, Chromium's DevTools, VNC), or when its socket
belongs to the gateway itself, to a program of the image's supervisord (the supervisor's direct
children: MCP mode, API mode, x11vnc, a child image's program), or to a process the gateway may not
look into (another user's, or a service that hid itself with ``PR_SET_DUMPABLE``, as the image's
Python programs do). Everything else (what shell sessions, detached apps, code runs and terminals
started, all ordinary processes of the sandbox user) is an app."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from ..shell.processes import live_processes

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    """One listening socket: its port and its inode (how ``/proc/<pid>/fd`` names it)."""

    port: int
    inode: int


def listeners() -> list[Listener]:
    """Listening TCP sockets (state ``0A`` in ``/proc/net/tcp{,6}``), IPv4 and IPv6."""
    found: list[Listener] = []
    for table in _TABLES:
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                found.append(Listener(int(fields[1].rsplit(":", 1)[1], 16), int(fields[9])))
    return found


def listening_ports(found: Collection[Listener]) -> list[str]:
    """Every port something listens on, as sorted strings (AIO's ``occupied_ports``)."""
    return [str(port) for port in sorted({listener.port for listener in found})]


def socket_holders(inodes: Collection[int]) -> dict[int, set[int]]:
    """For each socket inode, the processes holding it that this process may inspect (a forked
    server's socket may be held by several)."""
    wanted = {f"socket:[{inode}]": inode for inode in inodes}
    holders: dict[int, set[int]] = {}
    if not wanted:
        return holders
    try:
        names = os.listdir("/proc")
    except OSError:
        return holders
    for name in names:
        if not name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:  # gone, another user's, or not dumpable
            continue
        for fd in fds:
            try:
                inode = wanted.get(os.readlink(f"/proc/{name}/fd/{fd}"))
            except OSError:
                continue
            if inode is not None:
                holders.setdefault(inode, set()).add(int(name))
    return holders


def supervised_programs() -> set[int]:
    """The programs of the supervisord the gateway runs under (its parent's children), or none when
    the gateway was started some other way."""
    parent = os.getppid()
    try:
        command = Path(f"/proc/{parent}/cmdline").read_bytes()
    except OSError:
        return set()
    if b"supervisord" not in command:
        return set()
    return {proc.pid for proc in live_processes() if proc.ppid == parent}


def app_ports(found: Collection[Listener], own_ports: Collection[int]) -> list[int]:
    """The ports of ``found`` that are apps, sorted (see the module docstring)."""
    candidates = [listener for listener in found if listener.port not in own_ports]
    holders = socket_holders({listener.inode for listener in candidates})
    sandbox_own = supervised_programs() | {os.getpid()}
    hidden = {
        listener.port
        for listener in candidates
        if not (held_by := holders.get(listener.inode)) or held_by & sandbox_own
    }
    return sorted({listener.port for listener in candidates} - hidden)
