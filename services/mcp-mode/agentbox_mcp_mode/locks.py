"""The per-workspace run lock.

Two agents in one directory would trample each other's files and sessions, so a run holds its
workspace exclusively. Acquisition never waits: a busy workspace is refused at once
(:class:`WorkspaceBusy`) and no agent is started.

One :class:`WorkspaceLocks` instance per process is shared by every surface that starts runs —
MCP ``run_prompt`` and, in API mode, ``/run`` and the OpenAI endpoint — so they keep each other
out. The standalone MCP process has its own instance. Use :meth:`WorkspaceLocks.hold` around a
run (released however the run ends: success, crash, timeout, cancellation), or
:meth:`acquire` / :meth:`release` when the run outlives the request that started it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .run_stats import RUN_STATS


class WorkspaceBusy(RuntimeError):
    """Another run holds the workspace."""

    def __init__(self, workspace: Path | str) -> None:
        super().__init__(f"workspace {workspace} is busy with another run")
        self.workspace = str(workspace)


class WorkspaceLocks:
    """Non-blocking exclusive locks keyed by the resolved run directory, i.e. the value of
    ``Workspace.run_directory(subpath)`` (thread-safe, so a worker thread may release)."""

    def __init__(self) -> None:
        self._busy: set[str] = set()
        self._guard = threading.Lock()

    def acquire(self, workspace: Path | str) -> None:
        """Take the workspace or raise :class:`WorkspaceBusy` immediately."""
        key = str(workspace)
        with self._guard:
            if key in self._busy:
                RUN_STATS.busy_refused += 1
                raise WorkspaceBusy(key)
            self._busy.add(key)

    def release(self, workspace: Path | str) -> None:
        with self._guard:
            self._busy.discard(str(workspace))

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
