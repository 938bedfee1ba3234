"""Fixtures for MCP mode: settings on a temp workspace and the stand-in agent CLI."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from agentbox_mcp_mode.settings import McpModeSettings

from .helpers import StandIn


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
        base = {
            "AICODEBOX_WORKSPACE": str(workspace),
            "AICODEBOX_STATE_DIR": str(tmp_path / "state"),
            "AICODEBOX_AGENT_BINARY": str(stand_in.path),
            "AICODEBOX_ADAPTER": "claude",
            "AICODEBOX_RUN_TIMEOUT": "30",
        }
        return McpModeSettings.from_env({**base, **env})

    return make
