"""Process-group handling: commands run in their own session so a timeout or a disconnect can kill
the whole tree, not just the direct child."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
from collections.abc import Mapping
from typing import Any

#: Variables that must never reach commands, interpreters or agents run inside the sandbox.
SECRET_VARIABLES = frozenset(
    {"AIO_API_KEY", "AICODEBOX_MCP_MODE_TOKEN", "AICODEBOX_API_MODE_TOKEN", "AICODEBOX_TELEGRAM_MODE_TOKEN"}
)
_PR_SET_DUMPABLE = 4


def sandbox_environment(
    base: Mapping[str, str] | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for sandboxed programs: the service's own, minus its secrets."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in SECRET_VARIABLES}
    if extra:
        env.update(extra)
    return env


async def spawn_sandboxed(
    *argv: str,
    stdin: int = asyncio.subprocess.DEVNULL,
    stdout: int = asyncio.subprocess.PIPE,
    stderr: int = asyncio.subprocess.PIPE,
    env: Mapping[str, str] | None = None,
    **options: Any,
) -> asyncio.subprocess.Process:
    """Start a sandboxed program: in its own session (so :func:`kill_process_group` stops its whole
    tree) with the sandbox's environment unless ``env`` is given; ``options`` go to
    :func:`asyncio.create_subprocess_exec` (``cwd``, ``limit`` ...)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=sandbox_environment() if env is None else dict(env),
        start_new_session=True,
        **options,
    )


def hide_own_environment() -> None:
    """Mark this process non-dumpable, so that sandbox commands running as the same user can neither
    read its ``/proc/<pid>/environ`` (where ``AIO_API_KEY`` and the tokens live) nor ptrace it.
    ``execve`` resets the flag, so the commands it starts are unaffected. Best effort (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def pid_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists (ours or another user's; a zombie counts until reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_process_group(pid: int, sig: int = signal.SIGKILL) -> None:
    """Signal the process group led by ``pid``; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def terminate_process_group(process: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    """SIGTERM the group, wait ``grace`` seconds, then SIGKILL whatever is left and reap the child."""
    if process.returncode is None:
        kill_process_group(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            pass
    kill_process_group(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            await process.wait()


async def run_bounded(args: list[str], limit: float) -> tuple[int, bytes, bytes]:
    """Run ``args`` in its own process group with the sandbox's environment (no stdin); its exit code,
    stdout and stderr. Past ``limit`` seconds, or when cancelled, the whole group is killed
    (``TimeoutError`` for the former)."""
    process = await spawn_sandboxed(*args)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), limit)
    except BaseException:
        kill_process_group(process.pid)
        await asyncio.shield(process.wait())
        raise
    assert process.returncode is not None
    return process.returncode, stdout, stderr
