"""Finding what a shell started (in /proc), so a kill spares the session and earlier jobs but misses
nothing, not even a process that left the shell's kernel session with ``setsid``.

Each shell is a child subreaper (``PR_SET_CHILD_SUBREAPER``, set by :mod:`.forkserver`): a process that
outlives its parent is re-parented to the shell instead of to init, so everything a session started
stays below its shell in the process tree, whatever session or group it moved to."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from agentbox_common.processes import kill_process_group

from .record import CommandRecord

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: Rounds of "find, kill" before giving up on a tree that keeps forking.
KILL_ROUNDS = 20


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int


def boot_ticks() -> int:
    """Now, in the clock of ``/proc/<pid>/stat``'s start time (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLOCK_TICKS)


def live_processes() -> list[Proc]:
    """Every live (non-zombie) process, from ``/proc/<pid>/stat``."""
    found: list[Proc] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                data = stat.read()
            fields = data[data.rindex(b")") + 2 :].split()
            if fields[0] == b"Z":
                continue
            found.append(Proc(int(name), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])))
        except (OSError, ValueError, IndexError):
            continue
    return found


def descendants(roots: Collection[int], procs: Iterable[Proc]) -> list[Proc]:
    """The processes below ``roots`` in the process tree (the roots themselves excluded)."""
    children: dict[int, list[Proc]] = {}
    for proc in procs:
        children.setdefault(proc.ppid, []).append(proc)
    found: list[Proc] = []
    stack = list(roots)
    while stack:
        for child in children.pop(stack.pop(), []):
            found.append(child)
            stack.append(child.pid)
    return found


def session_processes(shell_pids: Collection[int]) -> list[Proc]:
    """Everything the shells ``shell_pids`` started and that is still alive: their descendants, and
    what stayed in their kernel sessions after its shell died (the shells themselves excluded)."""
    procs = live_processes()
    found = {proc.pid: proc for proc in descendants(shell_pids, procs)}
    found.update((p.pid, p) for p in procs if p.sid in shell_pids and p.pid not in shell_pids)
    return list(found.values())


def command_targets(shell_pid: int, record: CommandRecord) -> tuple[set[int], set[int]]:
    """Process groups and lone processes started by the running command.

    Spared: processes started before it (``/proc`` start ticks: one started in the very clock tick
    the command started in counts as the command's), background jobs the shell
    reported before it, groups whose leader predates it (an earlier job that forked meanwhile), and
    children of processes that predate it. Processes in the shell's own group (command
    substitutions) and those that left its kernel session are signalled one by one."""
    since = record.start_tick
    procs = live_processes()
    by_pid = {proc.pid: proc for proc in procs}
    below = {proc.pid for proc in descendants([shell_pid], procs)}
    groups: set[int] = set()
    pids: set[int] = set()
    for proc in procs:
        if proc.pid not in below and proc.sid != shell_pid:
            continue
        if proc.pid == shell_pid or proc.start < since or proc.pgid in record.earlier_jobs:
            continue
        if _has_older_ancestor(proc, by_pid, below, since):
            continue
        if proc.pgid == shell_pid or proc.sid != shell_pid:
            pids.add(proc.pid)
        elif (leader := by_pid.get(proc.pgid)) is None or leader.start >= since:
            groups.add(proc.pgid)
    return groups, pids


def _has_older_ancestor(proc: Proc, by_pid: dict[int, Proc], below: set[int], since: int) -> bool:
    """Whether a process between ``proc`` and the shell started before ``since`` (an earlier job)."""
    seen = {proc.pid}
    parent = by_pid.get(proc.ppid)
    while parent is not None and parent.pid in below and parent.pid not in seen:
        if parent.start < since:
            return True
        seen.add(parent.pid)
        parent = by_pid.get(parent.ppid)
    return False


def signal_all(groups: set[int], pids: set[int], sig: int) -> None:
    for group in groups:
        kill_process_group(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def kill_everything(shell_pids: Collection[int]) -> None:
    """SIGKILL all that the shells started, round after round while something is left (a killed
    process's children are re-parented to the living shell, so the next round finds them)."""
    for _ in range(KILL_ROUNDS):
        procs = session_processes(shell_pids)
        if not procs:
            return
        signal_all({p.pgid for p in procs if p.pgid not in shell_pids}, {p.pid for p in procs}, signal.SIGKILL)
        time.sleep(0.01)
