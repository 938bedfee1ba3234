"""Cron's record of every run, under ``AICODEBOX_CRON_MODE_HISTORY_DIR``:

* ``history/<workspace-slug>/<YYYYmmdd-HHMMSS>-<job>/`` with ``meta.json`` (job, instruction,
  workspace, times, exit code, status, session id), ``stdout.log`` (the agent's answer as it
  streamed it), ``stderr.log``, ``result.txt`` (the final answer) and, once notified,
  ``telegram.json`` (chat and message ids);
* ``history/<workspace-slug>/<job>.jsonl``: one summary line per run, newest last;
* ``telegram/<chat id>/<message id>``: the run directory a notification message belongs to, so
  Telegram mode can answer a reply to it with the job's instruction and result as context.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .config import ResolvedJob

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def workspace_slug(workspace: str) -> str:
    """A directory name for a job's workspace subpath (``workspace`` for the root itself)."""
    return _UNSAFE.sub("_", workspace).strip("._") or "workspace"


@dataclass(frozen=True)
class CronRecord:
    """One finished run as cron keeps it."""

    job: ResolvedJob
    workspace: Path
    started: datetime
    finished: datetime
    status: str
    exit_code: int | None
    text: str
    stderr: str
    session_id: str = ""

    def meta(self) -> dict[str, Any]:
        return {
            "job": self.job.name,
            "schedule": self.job.schedule,
            "instruction": self.job.instruction,
            "workspace": str(self.workspace),
            "started": self.started.isoformat(timespec="seconds"),
            "finished": self.finished.isoformat(timespec="seconds"),
            "duration_seconds": round((self.finished - self.started).total_seconds(), 3),
            "status": self.status,
            "exit_code": self.exit_code,
            "session_id": self.session_id,
        }


class CronHistory:
    def __init__(self, root: Path) -> None:
        self.root = root

    def job_dir(self, job: ResolvedJob) -> Path:
        return self.root / "history" / workspace_slug(job.workspace)

    def summary_file(self, job: ResolvedJob) -> Path:
        return self.job_dir(job) / f"{job.name}.jsonl"

    def write(self, record: CronRecord) -> Path:
        """Write the run's directory and its summary line; returns the directory."""
        base = self.job_dir(record.job)
        stamp = record.started.strftime("%Y%m%d-%H%M%S")
        run_dir = base / f"{stamp}-{record.job.name}"
        suffix = 1
        while run_dir.exists():  # two runs in one second (a 6-field schedule after a skip)
            suffix += 1
            run_dir = base / f"{stamp}-{record.job.name}-{suffix}"
        run_dir.mkdir(parents=True)
        meta = record.meta()
        (run_dir / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
        (run_dir / "stdout.log").write_text(record.text, encoding="utf-8")
        (run_dir / "stderr.log").write_text(record.stderr, encoding="utf-8")
        (run_dir / "result.txt").write_text(record.text, encoding="utf-8")
        summary = {**meta, "run_dir": str(run_dir), "result": record.text[:2000]}
        with self.summary_file(record.job).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(summary, ensure_ascii=False) + "\n")
        return run_dir

    def prior_runs_prompt(self, job: ResolvedJob) -> str:
        """The system-prompt note pointing the agent at the job's earlier runs."""
        return (
            f"You are running the scheduled job {job.name!r}. Earlier runs of this job are recorded in "
            f"{self.summary_file(job)} (one JSON object per run, newest last) and in the run directories "
            f"under {self.job_dir(job)} (result.txt holds each run's answer)."
        )

    def remember_notification(self, run_dir: Path, chat_id: int, message_ids: list[int]) -> None:
        (run_dir / "telegram.json").write_text(
            json.dumps({"chat_id": chat_id, "message_ids": message_ids}), encoding="utf-8"
        )
        index = self.root / "telegram" / str(chat_id)
        index.mkdir(parents=True, exist_ok=True)
        for message_id in message_ids:
            (index / str(message_id)).write_text(str(run_dir), encoding="utf-8")

    def notified_run(self, chat_id: int, message_id: int) -> dict[str, str] | None:
        """The job, instruction and result of the run a notification message belongs to, if any."""
        try:
            run_dir = Path((self.root / "telegram" / str(chat_id) / str(message_id)).read_text(encoding="utf-8"))
            meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
            result = (run_dir / "result.txt").read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None
        return {
            "job": meta["job"],
            "instruction": meta["instruction"],
            "result": result,
            "workspace": meta["workspace"],
        }
