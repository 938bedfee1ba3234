"""What the foreground-mode commands (``agentbox-cron``, ``agentbox-telegram``) share: reading the
MCP-mode configuration and adapter with a clean refusal, and running until SIGTERM/SIGINT, which
cancel the main task so runs in flight are cancelled and their agents killed."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from typing import Any, NoReturn

from agentbox_common.processes import hide_own_environment
from agentbox_common.settings import ConfigError

from .adapters import Adapter, load_adapter
from .settings import McpModeSettings


def refuse(command: str, problem: str, status: int = 2) -> NoReturn:
    """Stop at start-up with one line naming the problem (no traceback)."""
    print(f"{command}: refusing to start: {problem}", file=sys.stderr)
    sys.exit(status)


def agent_configuration(command: str) -> tuple[McpModeSettings, Adapter]:
    try:
        settings = McpModeSettings.from_env()
        return settings, load_adapter(settings)
    except ConfigError as exc:
        refuse(command, str(exc))


def run_until_signalled(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` until it ends or a signal cancels it; the process is first made non-dumpable, so
    the agents it starts (same user) cannot read its environment (the Telegram token) from /proc."""
    hide_own_environment()

    async def runner() -> None:
        task = asyncio.create_task(main)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(runner())
