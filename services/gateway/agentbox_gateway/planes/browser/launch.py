"""When the browser is there to use: AIO's ``BROWSER_START_MODE`` as the gateway lives it.

``async`` (the default) and ``auto`` start the browser program with the container; ``manual`` leaves
it, Chromium and the display unstarted until a call needs them, which keeps an idle sandbox small. In
the image, those programs then wait in ``agentbox-on-first-use`` on a FIFO each in
``AGENTBOX_START_ON_USE_DIR``: :meth:`BrowserLauncher.request` leaves the ``requested`` mark there
(a restarted program sees it and starts at once) and writes a line to every FIFO to wake the waiting
ones. No supervisord control is needed, so the gateway's user gets none.

Whatever the mode, a call that needs the browser before it has first answered waits for it (up to
``AGENTBOX_BROWSER_START_TIMEOUT``) rather than failing while it starts; once it has answered, the
call goes straight on and a browser that dies later fails calls at once, as before."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import time
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from .errors import BrowserDidNotStart

logger = logging.getLogger(__name__)

#: The mark a restarted program checks before it would wait again.
REQUESTED = "requested"
#: How often a waiting call tries the browser program's port (a refused loopback connect costs µs).
PROBE_INTERVAL = 0.05


class BrowserState(StrEnum):
    """What ``/ready`` says of the browser."""

    NOT_STARTED = "not started"
    STARTING = "starting"
    READY = "ready"


class BrowserLauncher:
    """Starts the browser on first use (``manual``) and lets calls wait for it while it starts.

    ``registered``: whether this box has a browser program at all (an upstream at its URL); without
    one nothing waits and nothing is started."""

    def __init__(
        self, mode: str, browser_url: str, *, registered: bool, start_dir: str = "", timeout: float = 30.0
    ) -> None:
        self.mode = mode
        self.registered = registered
        self.timeout = timeout
        address = urlsplit(browser_url)
        self._address = (address.hostname or "127.0.0.1", address.port or 80)
        self._start_dir = Path(start_dir) if start_dir else None
        self._requested = mode != "manual"
        self._up = False

    @property
    def requested(self) -> bool:
        """Whether the browser has been started (always, outside ``manual``)."""
        return self._requested

    @property
    def up(self) -> bool:
        """Whether the browser program has answered since the gateway started."""
        return self._up

    def note_up(self) -> None:
        """The browser program answered (a listing or a call reached it)."""
        self._up = True
        self._requested = True

    def state(self, serving: bool) -> BrowserState:
        """``/ready``'s word for it, given whether its tools are served right now."""
        if serving:
            return BrowserState.READY
        return BrowserState.STARTING if self._requested else BrowserState.NOT_STARTED

    def request(self) -> None:
        """Start the browser programs if they wait for their first use; at once and idempotent."""
        if self._requested:
            return
        self._requested = True
        if self._start_dir is None:
            logger.info("browser requested; no start-on-use directory, so waiting for it to be started")
            return
        logger.info("browser requested: starting it (BROWSER_START_MODE=manual)")
        try:
            (self._start_dir / REQUESTED).touch()
            fifos = sorted(self._start_dir.glob("*.fifo"))
        except OSError as exc:
            logger.warning("cannot mark the browser requested in %s: %s", self._start_dir, exc)
            return
        for fifo in fifos:
            _wake(fifo)

    async def ensure(self) -> None:
        """Return once the browser program accepts connections: at once when it already has, else
        after starting it (``manual``) and waiting; :class:`BrowserDidNotStart` past the timeout."""
        if self._up or not self.registered:
            return
        self.request()
        deadline = time.monotonic() + self.timeout
        while not await self._accepts():
            if time.monotonic() >= deadline:
                raise BrowserDidNotStart(f"the browser did not start within {self.timeout:g} s")
            await asyncio.sleep(PROBE_INTERVAL)
        self.note_up()

    async def _accepts(self) -> bool:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(*self._address), PROBE_INTERVAL * 4)
        except (OSError, TimeoutError):
            return False
        writer.close()
        return True


def _wake(fifo: Path) -> None:
    """One line to a waiting program's FIFO; nothing when no program holds it (it will see the mark)."""
    try:
        descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno not in (errno.ENXIO, errno.ENOENT):
            logger.warning("cannot wake %s: %s", fifo, exc)
        return
    try:
        os.write(descriptor, b"\n")
    except OSError as exc:
        logger.warning("cannot wake %s: %s", fifo, exc)
    finally:
        os.close(descriptor)


def built_tools(catalogue: Path) -> list[dict[str, object]]:
    """The browser program's ``tools/list`` as the image's build wrote it (none without the file)."""
    try:
        tools = json.loads(catalogue.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        logger.warning("browser tools catalogue %s unreadable: %s", catalogue, exc)
        return []
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        logger.warning("browser tools catalogue %s is not a list of tools", catalogue)
        return []
    return tools
