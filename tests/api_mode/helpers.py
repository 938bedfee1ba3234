"""Helpers for the API-mode tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from agentbox_mcp_mode.api_mode.app import build_api_app
from agentbox_mcp_mode.api_mode.settings import ApiModeSettings
from tests.support.servers import serve_app


@contextlib.contextmanager
def serve_api(settings: ApiModeSettings) -> Iterator[str]:
    """Serve the API-mode app; yields its base URL."""
    with serve_app(build_api_app(settings)) as base:
        yield base
