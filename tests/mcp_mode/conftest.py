"""Fixtures for MCP mode: settings on a temp workspace and the stand-in agent CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentbox_mcp_mode.settings import McpModeSettings

from .helpers import StandIn, agent_env


@pytest.fixture
def stand_in(tmp_path: Path) -> StandIn:
    directory = tmp_path / "bin"
    directory.mkdir()
    return StandIn(directory)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def make_settings(tmp_path: Path, workspace: Path, stand_in: StandIn) -> Callable[..., McpModeSettings]:
    """Settings from an environment: the temp workspace and the stand-in CLI unless overridden."""

    def make(**env: str) -> McpModeSettings:
        return McpModeSettings.from_env({**agent_env(workspace, tmp_path, stand_in), **env})

    return make
