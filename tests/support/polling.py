"""Waiting for a condition in tests, bounded in time."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(predicate: Callable[[], object], seconds: float = 5.0) -> object:
    """Poll ``predicate`` until it returns something truthy; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not (value := predicate()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return value
