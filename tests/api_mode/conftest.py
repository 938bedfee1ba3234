"""Fixtures for API mode: settings on a temp workspace with the stand-in agent CLI (reused from the
MCP-mode tests), and a served app."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentbox_mcp_mode.api_mode.settings import ApiModeSettings
from tests.mcp_mode.conftest import stand_in, workspace  # noqa: F401 - fixtures reused here
from tests.mcp_mode.helpers import StandIn, agent_env

from .helpers import serve_api


@pytest.fixture
def make_api_settings(
    tmp_path: Path,
    workspace: Path,  # noqa: F811 - the fixture imported above
    stand_in: StandIn,  # noqa: F811
) -> Callable[..., ApiModeSettings]:
    """API settings from an environment: temp workspace, stand-in CLI, two models unless overridden."""

    def make(**env: str) -> ApiModeSettings:
        base = {**agent_env(workspace, tmp_path, stand_in), "AICODEBOX_AVAILABLE_MODELS": "sonnet,opus"}
        return ApiModeSettings.from_env({**base, **env})

    return make


@pytest.fixture
def api(make_api_settings) -> Iterator[str]:
    """Base URL of an API-mode server without tokens and without MCP."""
    with serve_api(make_api_settings()) as base:
        yield base
