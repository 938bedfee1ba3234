from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentbox_gateway.planes.shell import ShellPlane
from agentbox_gateway.settings import GatewaySettings


@pytest.fixture
async def plane() -> AsyncIterator[ShellPlane]:
    """A shell plane with the default settings, closed after the test."""
    shell = ShellPlane(GatewaySettings())
    try:
        yield shell
    finally:
        await shell.aclose()
