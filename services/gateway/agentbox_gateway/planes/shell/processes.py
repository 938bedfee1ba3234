"""Finding what a command started (in /proc), so a kill spares the session and earlier jobs."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Collection
from dataclasses import dataclass

from agentbox_common.processes import kill_process_group

from .record import CommandRecord

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Proc:
    pid: int
    pgid: int
    start: int


def boot_ticks() -> int:
    """Now, in the clock of ``/proc/<pid>/stat``'s start time (ticks since boot)."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _CLOCK_TICKS)


def session_processes(sids: Collection[int]) -> list[Proc]:
    """Live processes of the kernel sessions ``sids`` (everything a shell started, orphans included)."""
    found = []
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
            if fields[0] == b"Z" or int(fields[3]) not in sids:
                continue
            found.append(Proc(int(name), int(fields[2]), int(fields[19])))
        except (OSError, ValueError, IndexError):
            continue
    return found


def command_targets(shell_pid: int, record: CommandRecord) -> tuple[set[int], set[int]]:
    """Process groups and lone processes started by the running command.

    Spared: processes started before it (``/proc`` start ticks), background jobs the shell
    reported before it, and groups whose leader predates it (an earlier job that forked meanwhile).
    Processes in the shell's own group (command substitutions) are signalled one by one."""
    since = record.start_tick
    procs = session_processes({shell_pid})
    leader_start = {proc.pid: proc.start for proc in procs}
    groups: set[int] = set()
    pids: set[int] = set()
    for proc in procs:
        if proc.pid == shell_pid or proc.start < since or proc.pgid in record.earlier_jobs:
            continue
        if proc.pgid == shell_pid:
            pids.add(proc.pid)
        elif leader_start.get(proc.pgid, since) >= since:
            groups.add(proc.pgid)
    return groups, pids


def signal_all(groups: set[int], pids: set[int], sig: int) -> None:
    for group in groups:
        kill_process_group(group, sig)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
