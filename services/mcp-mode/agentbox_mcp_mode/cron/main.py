"""``agentbox-cron``: cron mode as its own program (the image starts it with ``AICODEBOX_CRON_MODE=1``
and without Telegram mode; with both on, cron runs inside ``agentbox-telegram``). A missing or
invalid job file stops it at start-up with a message naming the problem and exit status 2."""

from __future__ import annotations

import logging

from agentbox_common.logging import configure_logging
from agentbox_common.settings import ConfigError

from ..foreground import agent_configuration, refuse, run_until_signalled
from ..run_service import RunService
from ..telegram_bot.client import make_bot
from .config import CronSettings, ResolvedJob
from .history import CronHistory
from .scheduler import CronScheduler

logger = logging.getLogger(__name__)


def load_cron(command: str) -> tuple[CronSettings, list[ResolvedJob]]:
    try:
        cron = CronSettings.from_env()
        return cron, cron.load()
    except ConfigError as exc:
        refuse(command, str(exc))


def build_scheduler(cron: CronSettings, jobs: list[ResolvedJob], service: RunService) -> CronScheduler:
    bot = make_bot(cron.telegram_token, cron.telegram_api_url) if cron.telegram_token else None
    return CronScheduler(jobs, service, CronHistory(cron.history_dir), bot)


def main() -> None:
    configure_logging()
    settings, adapter = agent_configuration("agentbox-cron")
    cron, jobs = load_cron("agentbox-cron")
    scheduler = build_scheduler(cron, jobs, RunService(settings, adapter))
    logger.info("cron mode: %d job(s) from %s, history in %s", len(jobs), cron.file, cron.history_dir)
    run_until_signalled(scheduler.run_forever())
