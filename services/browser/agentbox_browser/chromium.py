"""Chromium under supervision: started with CDP on loopback and a throw-away profile, in its own
process group, restarted with backoff when it dies, and stopped (the whole group) on shutdown.

Chromium is told to die with this program (``PR_SET_PDEATHSIG``) so that a killed browser program
never leaves a browser holding the CDP port behind."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

import httpx

from agentbox_common.http import plain_http_only
from agentbox_common.processes import pid_exists, sandbox_environment, spawn_sandboxed, terminate_process_group

from .settings import BrowserSettings

logger = logging.getLogger(__name__)

BASE_FLAGS = (
    # Chromium's own sandbox needs user namespaces, which Docker's default seccomp profile refuses (the
    # container is the sandbox). --test-type, as chromedriver passes it, keeps Chromium from drawing its
    # "unsupported command-line flag: --no-sandbox" bar across the top of every live view.
    "--no-sandbox",
    "--test-type",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    # Pages restored from the back-forward cache fire no load event, which Playwright waits for.
    "--disable-back-forward-cache",
    # The switches Playwright launches Chromium with for fast, steady screenshots and rendering
    # (playwright-core's chromiumSwitches): screenshots on a new surface instead of a full-page
    # repaint, no paint holding, no throttling of timers, renderers or IPC of a tab in the back.
    # Chromium honours one --enable-features only, so it also carries NetworkServiceInProcess2: the
    # network service runs inside the browser process, not in a utility process of its own (~20 MiB
    # less when idle; navigations as fast).
    "--enable-features=CDPScreenshotNewSurface,NetworkServiceInProcess2",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-ipc-flooding-protection",
    "--disable-hang-monitor",
    # Chromium honours one --disable-features only: PaintHolding for Playwright's reason above; a
    # headless sandbox has no use for the WebUI omnibox popups Chromium would preload (~40 MiB idle).
    "--disable-features=PaintHolding,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup",
)
START_TIMEOUT = 30.0
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
#: A Chromium that stayed up this long counts as healthy again: the next crash restarts it quickly.
STABLE_AFTER = 30.0
PROFILE_PREFIX = "agentbox-chromium-"
_PR_SET_PDEATHSIG = 1
#: Resolved before any fork: the child must not load libraries between fork and exec.
_LIBC = ctypes.CDLL(None, use_errno=True)


class ChromiumError(RuntimeError):
    """Chromium could not be started."""


def chromium_command(settings: BrowserSettings, user_data_dir: str) -> list[str]:
    viewport = settings.viewport
    command = [
        settings.chromium,
        "--remote-debugging-address=127.0.0.1",
        f"--remote-debugging-port={settings.cdp_port}",
        # Headful (on the image's display): the window fills the screen the live view shows, and its
        # pages' accessibility tree is exposed over AT-SPI2 (/v2/computer/accessibility reads it).
        *(["--headless=new"] if settings.headless else ["--window-position=0,0", "--force-renderer-accessibility"]),
        *BASE_FLAGS,
        f"--window-size={viewport.width},{viewport.height}",
        f"--user-data-dir={user_data_dir}",
        *([f"--proxy-pac-url={settings.proxy_pac_url}"] if settings.proxy_pac_url else []),
        *settings.extra_args,
        "about:blank",
    ]
    return command


def port_in_use(port: int) -> bool:
    """True when something listens on 127.0.0.1:``port`` (connections in TIME_WAIT do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def remove_stale_profiles() -> None:
    """Remove the profiles of browser programs that were killed before they could clean up (their
    directory names carry the owner's pid)."""
    for path in Path(tempfile.gettempdir()).glob(f"{PROFILE_PREFIX}*-*"):
        owner = path.name[len(PROFILE_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not pid_exists(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it if this program dies (Linux only, best effort)."""
    with contextlib.suppress(Exception):
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ChromiumSupervisor:
    """Keeps one Chromium running; ``ready`` tells whether its CDP endpoint answers right now."""

    def __init__(self, settings: BrowserSettings) -> None:
        self._settings = settings
        self._process: asyncio.subprocess.Process | None = None
        self._user_data_dir: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stopping = False
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self.ws_endpoint: str | None = None
        self.browser_version: str | None = None
        #: Incremented on every successful start, so a CDP client knows when to reconnect.
        self.generation = 0
        #: Why Chromium is not ready, for the "browser unavailable" errors.
        self.problem = "chromium is starting"
        #: ``--lang`` of the next start (set by :meth:`restart`), else Chromium's own default.
        self.locale: str | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._process is not None and self._process.returncode is None

    async def start(self) -> None:
        """Start Chromium and keep it running. A CDP port held by someone else is fatal (a client would
        drive the wrong browser); a Chromium that fails to start is retried in the background."""
        if port_in_use(self._settings.cdp_port):
            raise ChromiumError(
                f"AGENTBOX_CDP_PORT {self._settings.cdp_port} is already in use on 127.0.0.1 by another process"
            )
        await asyncio.to_thread(remove_stale_profiles)
        try:
            await self._launch()
        except ChromiumError as exc:
            self.problem = f"chromium failed to start: {exc}"
            logger.error("%s; retrying", self.problem)
        self._task = asyncio.create_task(self._watch(), name="chromium-supervisor")

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._reap()
        self.problem = "chromium is stopped"

    async def restart(self, locale: str | None = None) -> None:
        """Replace Chromium by a fresh one (new profile: no tabs, cookies or storage left), optionally in
        another ``locale``; returns once the new one answers. The watcher does the starting."""
        if locale is not None:
            self.locale = locale
        generation, process = self.generation, self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + START_TIMEOUT + MAX_BACKOFF
        while not (self.ready and self.generation > generation):
            if time.monotonic() > deadline:
                raise ChromiumError(f"chromium did not come back: {self.problem}")
            await asyncio.sleep(0.05)

    async def _launch(self) -> None:
        self._user_data_dir = tempfile.mkdtemp(prefix=f"{PROFILE_PREFIX}{os.getpid()}-")
        command = chromium_command(self._settings, self._user_data_dir)
        environment = sandbox_environment()
        if self.locale:
            # Chromium on Linux takes its UI locale from the environment; --accept-lang sets navigator.languages.
            command += [f"--lang={self.locale}", f"--accept-lang={self.locale}"]
            environment["LANGUAGE"] = self.locale.replace("-", "_")
        self._stderr_tail.clear()
        try:
            self._process = await spawn_sandboxed(
                *command, stdout=asyncio.subprocess.DEVNULL, env=environment, preexec_fn=_die_with_parent
            )
        except OSError as exc:
            await self._reap()
            raise ChromiumError(f"cannot start {command[0]}: {exc}") from exc
        self._stderr_task = asyncio.create_task(self._read_stderr(self._process), name="chromium-stderr")
        try:
            version = await self._wait_for_cdp(self._process)
        except ChromiumError:
            await self._reap()
            raise
        self.ws_endpoint = version["webSocketDebuggerUrl"]
        self.browser_version = version.get("Browser")
        self.generation += 1
        self.problem = ""
        self._ready.set()
        logger.info(
            "chromium %s ready (pid %d, CDP %s)",
            self.browser_version,
            self._process.pid,
            self._settings.cdp_url,
        )

    async def _wait_for_cdp(self, process: asyncio.subprocess.Process) -> dict[str, str]:
        url = f"{self._settings.cdp_url}/json/version"
        deadline = time.monotonic() + START_TIMEOUT
        async with httpx.AsyncClient(timeout=2.0, verify=plain_http_only()) as client:
            while time.monotonic() < deadline:
                if process.returncode is not None:
                    raise ChromiumError(
                        f"chromium exited with code {process.returncode} while starting: {self._tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                    response = await client.get(url)
                    if response.status_code == 200 and response.json()["webSocketDebuggerUrl"]:
                        version: dict[str, str] = response.json()
                        return version
                await asyncio.sleep(0.05)
        raise ChromiumError(f"chromium did not answer on {url} within {START_TIMEOUT:g} s: {self._tail()}")

    async def _watch(self) -> None:
        """Wait for Chromium to die, then start it again after a growing pause."""
        backoff = FIRST_BACKOFF
        while not self._stopping:
            if self._process is not None:
                started = time.monotonic()
                code = await self._process.wait()
                self._ready.clear()
                if self._stopping:
                    return
                await self._reap()
                if time.monotonic() - started >= STABLE_AFTER:
                    backoff = FIRST_BACKOFF
                self.problem = f"chromium exited ({_describe_exit(code)}); restarting in {backoff:g} s"
                logger.warning("%s; last output: %s", self.problem, self._tail())
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF)
            if port_in_use(self._settings.cdp_port):
                self.problem = f"CDP port {self._settings.cdp_port} is held by another process"
                logger.error("cannot restart chromium: %s", self.problem)
                continue
            try:
                await self._launch()
            except ChromiumError as exc:
                self.problem = f"chromium failed to start: {exc}"
                logger.error("%s", self.problem)

    async def _reap(self) -> None:
        """Stop what is left of the process group and remove the profile."""
        self._ready.clear()
        process, self._process = self._process, None
        if process is not None:
            await terminate_process_group(process, grace=3.0)
        directory, self._user_data_dir = self._user_data_dir, None
        if directory is not None:
            await asyncio.to_thread(shutil.rmtree, directory, True)

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        while line := await process.stderr.readline():
            text = line.decode(errors="replace").rstrip()
            self._stderr_tail.append(text)
            logger.debug("chromium: %s", text)

    def _tail(self) -> str:
        return " | ".join(self._stderr_tail) or "(no output)"


def _describe_exit(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"
