"""Fixtures of the foreground modes (cron, Telegram): a temp workspace and state, the stand-in agent
CLI (from the MCP-mode tests), the environment the console commands run with, and a fake Bot API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp_mode.conftest import stand_in, workspace  # noqa: F401 - fixtures reused here
from tests.mcp_mode.helpers import StandIn, agent_env
from tests.support.fake_bot_api import FakeBotApi

TOKEN = "4242:fake-token-for-tests"


@pytest.fixture
def mode_env(tmp_path: Path, workspace: Path, stand_in: StandIn) -> dict[str, str]:  # noqa: F811
    """Environment of ``agentbox-cron`` / ``agentbox-telegram``: the stand-in CLI, temp state and home."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        **agent_env(workspace, tmp_path, stand_in),
        "HOME": str(home),
        "AICODEBOX_CRON_MODE_HISTORY_DIR": str(tmp_path / "cron"),
        "LOG_LEVEL": "INFO",
    }


@pytest.fixture
def bot_api() -> Iterator[tuple[FakeBotApi, str]]:
    fake = FakeBotApi(TOKEN)
    with fake.serve() as url:
        yield fake, url
