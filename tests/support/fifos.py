"""FIFOs for tests of code that must refuse them: a server that opens one blocking waits forever, so
a watchdog opens the other end after a while; the test then fails on its timing instead of hanging."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path


def _release(fifo: Path) -> None:
    """Open ``fifo`` both ways for a moment: a blocked reader's or writer's ``open`` returns."""
    with contextlib.suppress(OSError):
        descriptor = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        time.sleep(0.5)
        os.close(descriptor)


@contextlib.contextmanager
def watched_fifo(path: Path, release_after: float = 3.0) -> Iterator[Path]:
    """Make a FIFO at ``path``; a call still blocked on it after ``release_after`` s is released."""
    os.mkfifo(path)
    timer = threading.Timer(release_after, _release, (path,))
    timer.daemon = True
    timer.start()
    try:
        yield path
    finally:
        timer.cancel()
