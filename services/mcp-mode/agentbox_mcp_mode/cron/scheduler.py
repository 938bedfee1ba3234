"""Cron's clock and its job runs.

Each job's next time comes from its schedule (croniter; 6 fields = seconds first) in the
container's local time. At a job's time its run starts as a task, unless the job's previous run
is still going — then the tick is skipped and logged. A run goes through the shared
:class:`~..run_service.RunService`, so it takes the cross-process workspace lock like MCP
``run_prompt`` and Telegram do: a workspace busy elsewhere also skips the tick (logged). Ticks
missed while the process was busy are not replayed. Every run that starts is recorded
(:mod:`.history`) and, when a chat applies, posted to Telegram.

Instruction placeholders: ``{system_datetime}`` (local ISO time of the tick), ``{job_name}`` and
``{workspace}`` (the absolute path of the job's workspace); other braces are left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from datetime import datetime
from pathlib import Path

import anyio
from croniter import croniter
from telegram import Bot
from telegram.error import TelegramError

from agentbox_common.errors import PlaneError

from ..locks import TooManyRuns, WorkspaceBusy
from ..run_service import RunService, RunSpec
from ..telegram_bot.client import send_answer
from .config import ResolvedJob, seconds_first
from .history import CronHistory, CronRecord

logger = logging.getLogger(__name__)


def expand(instruction: str, job: ResolvedJob, workspace: Path, now: datetime) -> str:
    return (
        instruction.replace("{system_datetime}", now.isoformat(timespec="seconds"))
        .replace("{job_name}", job.name)
        .replace("{workspace}", str(workspace))
    )


def _now() -> datetime:
    return datetime.now().astimezone()


class CronScheduler:
    def __init__(
        self,
        jobs: list[ResolvedJob],
        service: RunService,
        history: CronHistory,
        bot: Bot | None = None,
    ) -> None:
        self.jobs = jobs
        self.service = service
        self.history = history
        self.bot = bot
        self._running: dict[str, asyncio.Task[None]] = {}

    async def run_forever(self) -> None:
        """Tick until cancelled; cancelling also cancels (and so kills) the runs in flight."""
        start = _now()
        timers = {
            job.name: croniter(job.schedule, start, second_at_beginning=seconds_first(job.schedule))
            for job in self.jobs
        }
        due = {name: timer.get_next(datetime) for name, timer in timers.items()}
        for job in self.jobs:
            logger.info("cron job %s (%s) first runs at %s", job.name, job.schedule, due[job.name].isoformat())
        try:
            while True:
                wait = (min(due.values()) - _now()).total_seconds()
                if wait > 0:
                    await asyncio.sleep(wait)
                now = _now()
                for job in self.jobs:
                    if due[job.name] <= now:
                        self._tick(job, due[job.name])
                        while due[job.name] <= now:
                            due[job.name] = timers[job.name].get_next(datetime)
        finally:
            tasks = [task for task in self._running.values() if not task.done()]
            for task in tasks:
                task.cancel()
            if tasks:
                with contextlib.suppress(Exception):
                    await asyncio.wait(tasks, timeout=15)

    def _tick(self, job: ResolvedJob, when: datetime) -> None:
        previous = self._running.get(job.name)
        if previous is not None and not previous.done():
            logger.warning(
                "cron job %s: tick at %s skipped, the previous run is still going",
                job.name,
                when.isoformat(timespec="seconds"),
            )
            return
        self._running[job.name] = asyncio.create_task(self._guarded(job, when), name=f"cron-{job.name}")

    async def _guarded(self, job: ResolvedJob, when: datetime) -> None:
        try:
            await self.run_job(job, when)
        except asyncio.CancelledError:
            raise
        except Exception:  # one bad run never stops the clock
            logger.exception("cron job %s failed", job.name)

    async def run_job(self, job: ResolvedJob, when: datetime) -> None:
        started = _now()
        append = "\n\n".join(p for p in (job.append_system_prompt, self.history.prior_runs_prompt(job)) if p)
        spec = RunSpec(
            prompt=job.instruction,
            workspace=job.workspace,
            model=job.model,
            system_prompt=job.system_prompt,
            append_system_prompt=append,
            no_continue=job.no_continue,
            thinking=job.thinking,
        )
        try:
            request = await self.service.prepare(spec)
        except PlaneError as exc:  # a refused request or workspace
            logger.error("cron job %s cannot run: %s", job.name, exc)
            refused = CronRecord(job, self.service.workspace.root, started, _now(), "refused", None, "", str(exc))
            await anyio.to_thread.run_sync(self.history.write, refused)
            return
        request = dataclasses.replace(request, prompt=expand(job.instruction, job, request.cwd, when))
        try:
            outcome = await self.service.execute(request)
        except (WorkspaceBusy, TooManyRuns) as exc:
            logger.warning("cron job %s: tick at %s skipped: %s", job.name, when.isoformat(timespec="seconds"), exc)
            return
        failure = outcome.failure
        status = "ok" if failure is None else "failed"
        logger.info(
            "cron job %s: %s (exit %s) in %.1fs",
            job.name,
            status,
            outcome.exit_code,
            (_now() - started).total_seconds(),
        )
        record = CronRecord(
            job,
            request.cwd,
            started,
            _now(),
            status,
            outcome.exit_code,
            outcome.text,
            outcome.stderr if failure is None else f"{failure}\n{outcome.stderr}".strip(),
            outcome.session_id,
        )
        run_dir = await anyio.to_thread.run_sync(self.history.write, record)
        if job.telegram_chat_id is not None and self.bot is not None:
            await self._notify(job, record, run_dir, failure)

    async def _notify(self, job: ResolvedJob, record: CronRecord, run_dir: Path, failure: str | None) -> None:
        assert job.telegram_chat_id is not None and self.bot is not None
        heading = f"**cron {job.name}**" + (" failed" if failure else "")
        body = failure if failure else (record.text or "(empty result)")
        try:
            sent = await send_answer(self.bot, job.telegram_chat_id, f"{heading}\n\n{body}")
        except TelegramError as exc:
            logger.error("cron job %s: Telegram notification to %s failed: %s", job.name, job.telegram_chat_id, exc)
            return
        self.history.remember_notification(run_dir, job.telegram_chat_id, [m.message_id for m in sent])
