"""The Playwright side: one CDP connection to the supervised Chromium, its default context (the one
outside CDP clients see too) and the "current page" the tools act on.

The connection is made lazily and made again whenever the supervisor has started a new Chromium,
so the tools recover by themselves after a crash."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import re
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    ConsoleMessage,
    Page,
    Playwright,
    ViewportSize,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from agentbox_common.errors import Unavailable

from .chromium import ChromiumSupervisor
from .network_log import NetworkLog
from .settings import BrowserSettings

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_MS = 10_000
CONSOLE_LIMIT = 1000
#: The page the gateway opens in a background tab to make Chromium re-read its proxy settings.
SETTINGS_PAGE = "chrome://net-internals/"
_API_PREFIX = re.compile(r"^[A-Za-z]+\.[A-Za-z]+: ")
#: V8 settings for Playwright's Node driver, which idles between calls: a 1 MiB young generation
#: (not 16) and one V8 worker thread. About 12 MiB less memory; screenshots as fast (``bench/``).
DRIVER_NODE_OPTIONS = "--max-semi-space-size=1 --v8-pool-size=1"


def driver_node_options(current: str | None) -> str:
    """``NODE_OPTIONS`` for a process whose Node child is Playwright's driver (which gets a copy of
    its environment): :data:`DRIVER_NODE_OPTIONS`, then the ones already set, which win."""
    return f"{DRIVER_NODE_OPTIONS} {current}" if current else DRIVER_NODE_OPTIONS


class ChromiumUnavailable(Unavailable):
    """Chromium is down or cannot be reached; the message starts with ``browser unavailable:``.
    (The gateway's ``ChromiumUnavailable`` is the same condition seen from outside, over CDP.)"""

    def __init__(self, reason: str) -> None:
        super().__init__(f"browser unavailable: {reason}")


@dataclass(eq=False)
class PageWatch:
    """New tabs seen while an action runs: ``created`` as soon as Chromium makes the target,
    ``pages`` once Playwright has the page (after its first navigation commits)."""

    created: asyncio.Event = field(default_factory=asyncio.Event)
    surfaced: asyncio.Event = field(default_factory=asyncio.Event)
    pages: list[Page] = field(default_factory=list)


class BrowserSession:
    def __init__(self, supervisor: ChromiumSupervisor, settings: BrowserSettings) -> None:
        self._supervisor = supervisor
        #: Milliseconds a navigation may take (``AGENTBOX_NAV_TIMEOUT``), as Playwright counts them.
        self.nav_timeout_ms = settings.nav_timeout * 1000
        self._viewport: ViewportSize = {"width": settings.viewport.width, "height": settings.viewport.height}
        #: The X display Chromium runs headful on (None: headless), which the display recording grabs.
        self.display: str | None = None if settings.headless else os.environ.get("DISPLAY") or None
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None
        self._generation = 0
        self._current: Page | None = None
        self._sized: weakref.WeakSet[Page] = weakref.WeakSet()
        self._cdp_sessions: weakref.WeakKeyDictionary[Page, CDPSession] = weakref.WeakKeyDictionary()
        self._background: set[asyncio.Task[None]] = set()
        self._watches: set[PageWatch] = set()
        self._lock = asyncio.Lock()
        #: The latest console messages of every tab, oldest first, for ``/v1/browser/page/console``.
        self.console: collections.deque[dict[str, Any]] = collections.deque(maxlen=CONSOLE_LIMIT)
        #: The latest requests of every tab (``/v1/browser/network/requests`` and its HAR export).
        self.network = NetworkLog()

    async def start(self) -> None:
        self._playwright = await async_playwright().start()

    async def aclose(self) -> None:
        await self._disconnect()
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None

    @property
    def connected(self) -> bool:
        return (
            self._browser is not None
            and self._browser.is_connected()
            and self._generation == self._supervisor.generation
            and self._supervisor.ready
        )

    async def context(self) -> BrowserContext:
        if not self.connected:
            await self._connect()
        assert self._context is not None
        return self._context

    async def restart_browser(self, locale: str | None = None) -> None:
        """A fresh Chromium (see :meth:`ChromiumSupervisor.restart`); the next call reconnects."""
        async with self._lock:
            await self._disconnect()
        await self._supervisor.restart(locale)

    async def pages(self) -> list[Page]:
        return list((await self.context()).pages)

    async def page(self) -> Page:
        """The current page: the last one opened or switched to (a blank one when none is left)."""
        context = await self.context()
        if self._current is None or self._current.is_closed():
            # Never the gateway's settings tab: it may still be listed while it closes.
            tabs = [tab for tab in context.pages if not tab.url.startswith(SETTINGS_PAGE) and not tab.is_closed()]
            self._current = tabs[-1] if tabs else await context.new_page()
        await self._size(self._current)
        return self._current

    async def new_page(self) -> Page:
        page = await (await self.context()).new_page()
        await self._size(page)
        self._current = page
        return page

    async def cdp_session(self, page: Page) -> CDPSession:
        """A CDP session on ``page``, kept for the page's life (attaching one costs a round trip)."""
        cdp = self._cdp_sessions.get(page)
        if cdp is None:
            cdp = self._cdp_sessions[page] = await page.context.new_cdp_session(page)
        return cdp

    @property
    def viewport(self) -> ViewportSize:
        return ViewportSize(width=self._viewport["width"], height=self._viewport["height"])

    def set_current(self, page: Page) -> None:
        self._current = page

    async def _size(self, page: Page) -> None:
        if page not in self._sized and not page.is_closed():
            await page.set_viewport_size(self._viewport)
            self._sized.add(page)

    @contextlib.contextmanager
    def watch_new_pages(self) -> Iterator[PageWatch]:
        watch = PageWatch()
        self._watches.add(watch)
        try:
            yield watch
        finally:
            self._watches.discard(watch)

    def _on_target_created(self, event: dict[str, Any]) -> None:
        if event["targetInfo"]["type"] == "page":
            for watch in self._watches:
                watch.created.set()

    def _on_page(self, page: Page) -> None:
        """A tab opened by anyone (a tool, a popup, an outside CDP client) becomes the current page,
        but for the gateway's short-lived ``chrome://net-internals`` tab (it re-applies proxy settings)."""
        if page.url.startswith(SETTINGS_PAGE):
            return
        self._current = page
        for watch in self._watches:
            watch.pages.append(page)
            watch.surfaced.set()
        task = asyncio.create_task(self._size_quietly(page))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _on_console(self, message: ConsoleMessage) -> None:
        location = message.location
        self.console.append(
            {
                "type": message.type,
                "text": message.text,
                "url": location.get("url", ""),
                "line": location.get("lineNumber", 0),
                "timestamp": time.time(),
            }
        )

    async def _size_quietly(self, page: Page) -> None:
        with contextlib.suppress(PlaywrightError):
            await self._size(page)

    async def _connect(self) -> None:
        async with self._lock:
            if self.connected:
                return
            await self._disconnect()
            if not self._supervisor.ready or self._supervisor.ws_endpoint is None:
                raise ChromiumUnavailable(self._supervisor.problem or "chromium is not running")
            if self._playwright is None:
                raise ChromiumUnavailable("the Playwright driver is not running")
            generation = self._supervisor.generation
            try:
                browser = await self._playwright.chromium.connect_over_cdp(
                    self._supervisor.ws_endpoint, timeout=CONNECT_TIMEOUT_MS
                )
            except PlaywrightError as exc:
                raise ChromiumUnavailable(f"cannot connect to chromium over CDP: {first_line(exc)}") from exc
            context = browser.contexts[0]
            context.on("page", self._on_page)
            context.on("console", self._on_console)
            self.network.attach(context)
            # Playwright reports a popup only once its first navigation commits; Chromium says at once.
            targets = await browser.new_browser_cdp_session()
            targets.on("Target.targetCreated", self._on_target_created)
            await targets.send("Target.setDiscoverTargets", {"discover": True})
            self._browser, self._context, self._generation = browser, context, generation
            logger.info("connected to chromium over CDP (generation %d)", generation)

    async def _disconnect(self) -> None:
        browser, self._browser, self._context, self._current = self._browser, None, None, None
        if browser is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await browser.close()


def first_line(exc: BaseException) -> str:
    """Playwright's message without its call log (which repeats the arguments and is noisy)."""
    message = str(exc).split("\nCall log:", 1)[0].strip()
    message = _API_PREFIX.sub("", message.splitlines()[0] if message else "")
    return message or type(exc).__name__
