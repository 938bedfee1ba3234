"""The in-memory registry of ``/run`` runs: what ``/run/result``, ``DELETE /run/{id}`` and ``/status``
see.

A run is an asyncio task on the server's event loop (the adapters never block it), started with
its workspace already taken from the shared :class:`~agentbox_mcp_mode.locks.WorkspaceLocks`; the
registry gives the workspace back however the task ends (finished, failed, cancelled, even
cancelled before it ever ran), from the task's done callback. Cancelling the task cancels the
adapter, which kills the agent's whole process group.

Results of async runs wait to be collected: a finished run is handed out once by :meth:`collect`
(then forgotten, as aicodebox does) or dropped ``result_ttl`` seconds after it finished. Sync and
fire-and-forget runs are forgotten as soon as they end (their caller has, or wants, no result).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..locks import WorkspaceLocks

logger = logging.getLogger(__name__)

RunStatus = Literal["running", "completed", "failed", "cancelled"]

#: How long ``cancel`` and shutdown wait for a cancelled run to kill its agent.
CANCEL_WAIT = 15.0


@dataclass
class RunRecord:
    run_id: str
    workspace: Path
    status: RunStatus = "running"
    #: The run's answer fields once completed (exitCode, text, ...).
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    finished_at: float | None = None
    task: asyncio.Task[dict[str, Any]] | None = None

    def summary(self) -> dict[str, Any]:
        return {"runId": self.run_id, "workspace": str(self.workspace), "status": self.status}

    def public(self) -> dict[str, Any]:
        """Everything a client is told about the run."""
        answer = {**self.summary(), **self.result}
        if self.error is not None:
            answer["error"] = self.error
        return answer


class RunRegistry:
    def __init__(self, locks: WorkspaceLocks, result_ttl: float) -> None:
        self.locks = locks
        self.result_ttl = result_ttl
        self._runs: dict[str, RunRecord] = {}

    def start(
        self,
        workspace: Path,
        work: Callable[[], Coroutine[Any, Any, dict[str, Any]]],
        *,
        keep_result: bool,
    ) -> RunRecord:
        """Take ``workspace`` (raises WorkspaceBusy at once) and run ``work()`` as a task."""
        self._purge()
        self.locks.acquire(workspace)
        record = RunRecord(uuid.uuid4().hex, workspace)
        self._runs[record.run_id] = record
        try:
            record.task = asyncio.create_task(work(), name=f"run-{record.run_id}")
        except BaseException:
            self.locks.release(workspace)
            self._runs.pop(record.run_id, None)
            raise
        record.task.add_done_callback(lambda task: self._finished(record, task, keep_result))
        return record

    def _finished(self, record: RunRecord, task: asyncio.Task[dict[str, Any]], keep_result: bool) -> None:
        self.locks.release(record.workspace)
        record.finished_at = time.monotonic()
        if task.cancelled():
            record.status, record.error = "cancelled", "run cancelled"
        elif (exc := task.exception()) is not None:
            logger.error("run %s in %s failed", record.run_id, record.workspace, exc_info=exc)
            record.status, record.error = "failed", f"{type(exc).__name__}: {exc}"
        else:
            record.status, record.result = "completed", task.result()
        if not keep_result:
            self._runs.pop(record.run_id, None)

    def get(self, run_id: str) -> RunRecord | None:
        self._purge()
        return self._runs.get(run_id)

    def collect(self, run_id: str) -> RunRecord | None:
        """The run; a finished one is forgotten once handed out."""
        record = self.get(run_id)
        if record is not None and record.status != "running":
            self._runs.pop(run_id, None)
        return record

    async def cancel(self, run_id: str) -> RunRecord | None:
        """Cancel a running run and wait (bounded) until its agent is gone; None if unknown."""
        record = self.get(run_id)
        if record is not None and record.task is not None and not record.task.done():
            record.task.cancel()
            await asyncio.wait({record.task}, timeout=CANCEL_WAIT)
        return record

    def runs(self) -> list[RunRecord]:
        self._purge()
        return list(self._runs.values())

    async def aclose(self) -> None:
        """Cancel every running run (server shutdown) so no agent outlives the server."""
        tasks = {r.task for r in self._runs.values() if r.task is not None and not r.task.done()}
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_WAIT)

    def _purge(self) -> None:
        cutoff = time.monotonic() - self.result_ttl
        for run_id, record in list(self._runs.items()):
            if record.finished_at is not None and record.finished_at < cutoff:
                del self._runs[run_id]
