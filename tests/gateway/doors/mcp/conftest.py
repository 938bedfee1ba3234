from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import free_port, serve_app


@pytest.fixture
def upstream_port() -> int:
    return free_port()


@pytest.fixture
def aggregating_gateway(gateway_settings: GatewaySettings, upstream_port: int) -> Iterator[str]:
    """A gateway with one upstream registered on ``upstream_port`` (not started: the test starts
    and kills it), listed every second while it is down."""
    servers = {"later": {"url": f"http://127.0.0.1:{upstream_port}/mcp", "prefix": "later"}}
    with serve_app(build_app(replace(gateway_settings, mcp_servers=servers))) as url:
        yield url
