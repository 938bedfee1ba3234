"""Helpers of the foreground-mode tests: writing job files and reading cron's history."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml


def write_jobs(path: Path, jobs: list[dict[str, Any]], **top: Any) -> Path:
    path.write_text(yaml.safe_dump({**top, "jobs": jobs}))
    return path


def summaries(history: Path, job: str, slug: str = "workspace") -> list[dict[str, Any]]:
    summary = history / "history" / slug / f"{job}.jsonl"
    if not summary.exists():
        return []
    return [json.loads(line) for line in summary.read_text().splitlines() if line.strip()]


def wait_summaries(history: Path, job: str, count: int, timeout: float = 20, slug: str = "workspace") -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = summaries(history, job, slug)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise TimeoutError(f"{job}: {len(summaries(history, job, slug))} runs recorded, expected {count}")
