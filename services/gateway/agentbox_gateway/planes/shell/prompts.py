"""A command waiting at a prompt (``read``, ``[y/N]``, ``sudo -S``'s password) answered by whoever
started it, instead of hanging until its timeout.

Such a command runs with a FIFO as stdin (``stdin.CommandInput``). A process of its shell's session
blocked in a read of that FIFO for :data:`SETTLE` seconds is waiting for input: the caller's
:data:`Ask` is handed the last line printed (the prompt) and its answer is written as a line; no
answer (declined) closes stdin, so the command sees end of input as it would from ``/dev/null``.
Blocking is read from ``/proc/<pid>/wchan`` (a pipe read: ``pipe_read``, ``anon_pipe_read`` on newer
kernels, ``pipe_wait`` on older ones) of the processes whose stdin is the FIFO."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable

import anyio

from .errors import InvalidRequest
from .record import CommandRecord
from .session import ShellSession

#: What asks the caller for a line of input: the prompt in, the line out (``None``: no answer).
Ask = Callable[[str], Awaitable[str | None]]
#: How often a running command is looked at, and how long it must wait before it is asked for.
POLL = 0.2
SETTLE = 0.4
#: The most of the prompt (the output's last line) handed to :data:`Ask`.
PROMPT_CHARS = 500


def reading(fifo: str) -> bool:
    """Whether a process is blocked reading ``fifo`` as its stdin (only the command's own
    processes have it: the FIFO's name is random and private)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry.name}/fd/0") != fifo:
                    continue
                with open(f"/proc/{entry.name}/wchan") as wchan:
                    state = wchan.read()
            except OSError:
                continue
            if "pipe_read" in state or state == "pipe_wait":
                return True
    return False


def prompt_of(output: str) -> str:
    """The line a command is waiting on: what it printed last, without the empty end."""
    lines = output.rstrip("\n").rsplit("\n", 1)
    return lines[-1][-PROMPT_CHARS:].strip() or "The command is waiting for input."


async def answer_prompts(session: ShellSession, record: CommandRecord, ask: Ask, printed: Callable[[], str]) -> None:
    """Until ``record`` ends (cancel the caller's scope then): ask for each line it waits on."""
    stdin = record.stdin
    if stdin is None:
        return
    blocked_since: float | None = None
    while not record.done and stdin.open:
        await anyio.sleep(POLL)
        if not await anyio.to_thread.run_sync(reading, stdin.path):
            blocked_since = None
            continue
        now = anyio.current_time()
        if blocked_since is None:
            blocked_since = now
        if now - blocked_since < SETTLE:
            continue
        answer = await ask(prompt_of(printed()))
        blocked_since = None
        with contextlib.suppress(InvalidRequest):  # the command ended or stopped reading meanwhile
            await session.write(f"{answer}\n" if answer is not None else "\x04", record.command_id)
