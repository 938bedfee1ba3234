"""Waiting for a condition in tests, bounded in time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def until(predicate: Callable[[], object], seconds: float = 5.0) -> object:
    """Poll ``predicate`` until it returns something truthy; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return value


async def eventually(predicate: Callable[[], object], seconds: float = 5.0) -> bool:
    """Whether ``predicate`` turns truthy within ``seconds``, polled without blocking the event loop
    (processes and tasks the code under test starts get there asynchronously)."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True
