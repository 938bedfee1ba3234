"""``agentbox-telegram``: Telegram mode as its own program, with cron mode inside it when
``AICODEBOX_CRON_MODE=1`` (one process: the scheduler's notifications and the replies to them go
through the same Bot API). Without ``AICODEBOX_TELEGRAM_MODE_TOKEN`` it prints
``AICODEBOX_TELEGRAM_MODE_TOKEN not set`` and exits 1; any other configuration problem
(telegram.yml, the cron job file, a rejected token) stops it with a message naming the problem,
never the token."""

from __future__ import annotations

import asyncio
import logging
import sys

from telegram import Update
from telegram.error import InvalidToken, NetworkError

from agentbox_common.logging import configure_logging
from agentbox_common.settings import ConfigError

from ..cron.config import history_dir
from ..cron.history import CronHistory
from ..cron.main import build_scheduler, load_cron
from ..cron.scheduler import CronScheduler
from ..foreground import agent_configuration, refuse, run_until_signalled
from ..run_service import RunService
from .bot import TelegramMode
from .settings import TelegramSettings, TokenMissing

COMMAND = "agentbox-telegram"
logger = logging.getLogger(__name__)


async def serve(mode: TelegramMode, cron_scheduler: CronScheduler | None) -> None:
    application = mode.build()
    try:
        await application.initialize()  # getMe: checks the token
    except InvalidToken:
        refuse(COMMAND, f"the Bot API at {mode.settings.api_url} rejected AICODEBOX_TELEGRAM_MODE_TOKEN", 1)
    except NetworkError as exc:
        refuse(COMMAND, f"cannot reach the Bot API at {mode.settings.api_url}: {type(exc).__name__}", 1)
    cron_task = None
    try:
        await application.start()
        assert application.updater is not None
        await application.updater.start_polling(poll_interval=0.0, timeout=10, allowed_updates=Update.ALL_TYPES)
        logger.info("telegram mode: polling %s", mode.settings.api_url)
        if cron_scheduler is not None:
            cron_task = asyncio.create_task(cron_scheduler.run_forever(), name="cron")
        await asyncio.Event().wait()
    finally:
        if cron_task is not None:
            cron_task.cancel()
            await asyncio.wait({cron_task}, timeout=20)
        await mode.cancel_all()
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        if application.running:
            await application.stop()
        await application.shutdown()


def main() -> None:
    configure_logging()
    logging.getLogger("telegram").setLevel(max(logging.INFO, logging.getLogger().level))
    try:
        settings = TelegramSettings.from_env()
    except TokenMissing as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    except ConfigError as exc:
        refuse(COMMAND, str(exc))
    agent_settings, adapter = agent_configuration(COMMAND)
    service = RunService(agent_settings, adapter)
    scheduler = None
    if settings.cron_mode:
        cron_settings, jobs = load_cron(COMMAND)
        scheduler = build_scheduler(cron_settings, jobs, service)
    try:
        mode = TelegramMode(settings, service, CronHistory(history_dir()))
    except ConfigError as exc:
        refuse(COMMAND, str(exc))
    run_until_signalled(serve(mode, scheduler))
