"""Fixtures for MCP mode: settings on a temp workspace and the stand-in agent CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentbox_mcp_mode.settings import McpModeSettings
from tests.support.folders import new_folder

from .helpers import StandIn, agent_env


@pytest.fixture
def stand_in(tmp_path: Path) -> StandIn:
    return StandIn(new_folder(tmp_path, "bin"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return new_folder(tmp_path, "workspace")


@pytest.fixture
def make_settings(tmp_path: Path, workspace: Path, stand_in: StandIn) -> Callable[..., McpModeSettings]:
    """Settings from an environment: the temp workspace and the stand-in CLI unless overridden."""

    def make(**env: str) -> McpModeSettings:
        return McpModeSettings.from_env({**agent_env(workspace, tmp_path, stand_in), **env})

    return make
