"""The per-workspace run lock.

Two agents in one directory would trample each other's files and sessions, so a run holds its
workspace exclusively. Acquisition never waits: a busy workspace is refused at once
(:class:`WorkspaceBusy`) and no agent is started. The registry also caps the runs of the whole
process (``AICODEBOX_MAX_CONCURRENT_RUNS``): one more is refused with :class:`TooManyRuns`, so
many workspaces cannot start an unbounded number of agents.

One :class:`WorkspaceLocks` instance per process is shared by every surface that starts runs —
MCP ``run_prompt`` and, in API mode, ``/run`` and the OpenAI endpoint — so they keep each other
out. Given a ``lock_dir`` (``<AICODEBOX_STATE_DIR>/locks``), a held workspace is also an
``fcntl.flock`` on ``<lock_dir>/<hash of the path>.lock``, so separate processes — the standalone
MCP server, cron and Telegram — keep out of each other's workspaces too; the kernel drops the lock
when a process dies, so a crash never leaves a workspace stuck. Use :meth:`WorkspaceLocks.hold`
around a run (released however the run ends: success, crash, timeout, cancellation), or
:meth:`acquire` / :meth:`release` when the run outlives the request that started it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentbox_common.errors import Conflict, LimitReached

from .run_stats import RUN_STATS
from .settings import DEFAULT_MAX_CONCURRENT_RUNS


class WorkspaceBusy(Conflict):
    """Another run holds the workspace."""

    def __init__(self, workspace: Path | str) -> None:
        super().__init__(f"workspace {workspace} is busy with another run")
        self.workspace = str(workspace)


class TooManyRuns(LimitReached):
    """The process already runs its maximum number of agents."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"too many agent runs at once: the limit is {limit} (AICODEBOX_MAX_CONCURRENT_RUNS); retry later"
        )
        self.limit = limit


class WorkspaceLocks:
    """Non-blocking exclusive locks keyed by the resolved run directory, i.e. the value of
    ``Workspace.run_directory(subpath)`` (thread-safe, so a worker thread may release), at most
    ``max_runs`` held at once."""

    def __init__(self, lock_dir: Path | None = None, max_runs: int = DEFAULT_MAX_CONCURRENT_RUNS) -> None:
        self.max_runs = max_runs
        self._busy: set[str] = set()
        self._guard = threading.Lock()
        self._lock_dir = lock_dir
        self._files: dict[str, int] = {}

    def acquire(self, workspace: Path | str) -> None:
        """Take the workspace or raise :class:`WorkspaceBusy` / :class:`TooManyRuns` immediately."""
        key = str(workspace)
        with self._guard:
            try:
                if key in self._busy:
                    raise WorkspaceBusy(key)
                if len(self._busy) >= self.max_runs:
                    raise TooManyRuns(self.max_runs)
                if self._lock_dir is not None:
                    self._files[key] = self._lock_file(key)
            except (WorkspaceBusy, TooManyRuns):
                RUN_STATS.busy_refused += 1
                raise
            self._busy.add(key)

    def _lock_file(self, key: str) -> int:
        """An open descriptor holding the workspace's flock; WorkspaceBusy when another process has it."""
        assert self._lock_dir is not None
        self._lock_dir.mkdir(parents=True, exist_ok=True)
        path = self._lock_dir / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.lock"
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise WorkspaceBusy(key) from None
        except BaseException:
            os.close(descriptor)
            raise
        return descriptor

    def release(self, workspace: Path | str) -> None:
        key = str(workspace)
        with self._guard:
            self._busy.discard(key)
            descriptor = self._files.pop(key, None)
            if descriptor is not None:
                os.close(descriptor)  # closing the only descriptor drops the flock

    @contextmanager
    def hold(self, workspace: Path | str) -> Iterator[None]:
        self.acquire(workspace)
        try:
            yield
        finally:
            self.release(workspace)

    def is_busy(self, workspace: Path | str) -> bool:
        with self._guard:
            return str(workspace) in self._busy

    def busy(self) -> list[str]:
        """The workspaces held right now, sorted (API mode's ``/status``)."""
        with self._guard:
            return sorted(self._busy)
