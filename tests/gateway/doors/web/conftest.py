from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.display import NOVNC, Display, display_stack
from tests.support.requirements import missing


@pytest.fixture(scope="module")
def display() -> Iterator[Display]:
    """Xvfb, x11vnc and a Chromium on it, for a module's live-view tests."""
    if not (NOVNC / "vnc.html").exists():
        missing("Debian's novnc is not installed (apt-get install novnc)")
    with display_stack() as stack:
        yield stack
