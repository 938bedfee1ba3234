"""The browser plane: what the gateway itself does with Chromium, over its DevTools endpoint
(``AIO_CDP_URL``): report where and what the browser is, capture the display, and drive it with
real mouse and keyboard events. It needs only Chromium, not the browser program, connects on first
use and reconnects by itself after Chromium restarts."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar
from urllib.parse import urlsplit

import httpx

from agentbox_common.http import plain_http_only

from ...settings import GatewaySettings
from ..status import ABSENT, READY
from .actions import Action, parse_action
from .cdp import CdpConnection, CdpError
from .errors import BrowserError, BrowserUnavailable, InvalidAction
from .gui import InputDriver, InputState
from .launch import BrowserLauncher

if TYPE_CHECKING:  # imported where used: Xlib loads with the first GUI call on a display
    from .xdisplay import XDisplay, XInputDriver

#: Resolutions ``POST /v1/browser/config`` accepts (the agent-sandbox SDK's list).
RESOLUTIONS = frozenset(
    {
        (1920, 1080),
        (1920, 1200),
        (1680, 1050),
        (1600, 1200),
        (1400, 1050),
        (1360, 768),
        (1280, 1024),
        (1280, 960),
        (1280, 800),
        (1280, 720),
        (1024, 768),
        (800, 600),
        (640, 480),
    }
)
SCREENSHOT_TIMEOUT = 20.0
_PAGE_METRICS = "[innerWidth, innerHeight, devicePixelRatio, navigator.userAgent]"
_NET_INTERNALS = "chrome://net-internals/#proxy"
_PRESS_RELOAD = "document.getElementById('proxy-view-reload-settings')?.click()"

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Screenshot:
    """A PNG of the visible page, kept base64-encoded as Chromium sent it (MCP wants it so)."""

    data_base64: str
    width: int
    height: int
    mime_type: str = "image/png"

    @property
    def png(self) -> bytes:
        return base64.b64decode(self.data_base64)


@dataclass(frozen=True)
class BrowserInfo:
    """What the browser is: the path of its DevTools socket (``/devtools/browser/<id>``, which the
    gateway serves under ``/cdp``), the page's user agent, the display size in screenshot pixels,
    and whether the gateway shows the display live (``/vnc``)."""

    devtools_path: str
    user_agent: str
    viewport: dict[str, int]
    live_view: bool


@dataclass(frozen=True)
class PageSession:
    target_id: str
    session_id: str
    scale: float


def png_size(data_base64: str) -> tuple[int, int]:
    """Width and height from the PNG header (the first 24 bytes), without decoding the image."""
    head = base64.b64decode(data_base64[:32])
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:
        raise BrowserError("Chromium returned something that is not a PNG")
    return struct.unpack(">II", head[16:24])


def _names_failures(what: str) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """A :class:`BrowserError` out of the decorated operation names it (``screenshot failed: ...``),
    the same for every door."""

    def decorate(operation: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(operation)
        async def named(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return await operation(*args, **kwargs)
            except BrowserError as exc:
                raise BrowserError(f"{what} failed: {exc}") from exc

        return named

    return decorate


class BrowserPlane:
    """``launcher``: every operation that needs Chromium (or the display) has it started first, or
    waits while it starts; :meth:`status` only looks."""

    def __init__(self, settings: GatewaySettings, launcher: BrowserLauncher) -> None:
        self.cdp_url = settings.cdp_url.rstrip("/")
        self._launcher = launcher
        #: The gateway's own address, for ``cdp_url`` when no request says how callers reach it.
        self.vnc_enabled = settings.vnc_enabled
        self._display_name = settings.display if settings.vnc_enabled and settings.display else None
        self._connection: CdpConnection | None = None
        self._sessions: dict[str, PageSession] = {}
        self._lock = asyncio.Lock()
        self._input = InputState()
        self._input_lock = asyncio.Lock()

    @functools.cached_property
    def _display(self) -> XDisplay | None:
        """The display the GUI tools act on (the whole screen, real X input); None: the page, by CDP.
        Made on first use, so that Xlib is imported by the first GUI call, not at start-up."""
        if self._display_name is None:
            return None
        from .xdisplay import XDisplay

        return XDisplay(self._display_name)

    @functools.cached_property
    def _http(self) -> httpx.AsyncClient:
        """Made on first use: a client's transport imports httpcore and h11 (some 50 ms of start-up)."""
        return httpx.AsyncClient(timeout=3.0, trust_env=False, verify=plain_http_only())

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()
            self._connection = None
        if "_http" in self.__dict__:
            await self._http.aclose()

    # -- DevTools endpoint ---------------------------------------------------------------------

    async def _get_json(self, path: str) -> Any:
        url = f"{self.cdp_url}{path}"
        try:
            response = await self._http.get(url)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise BrowserUnavailable(f"{url} did not answer ({type(exc).__name__}: {exc})") from exc

    async def version(self) -> dict[str, Any]:
        """Chromium's ``/json/version``; :class:`BrowserUnavailable` when nothing answers."""
        await self._launcher.ensure()
        version: dict[str, Any] = await self._get_json("/json/version")
        return version

    async def status(self) -> dict[str, Any]:
        """For ``/v1/capabilities``: never raises, never starts the browser."""
        try:
            version = await self._get_json("/json/version")
        except Exception as exc:
            return {"status": ABSENT, "cdp": self.cdp_url, "detail": str(exc)}
        return {"status": READY, "cdp": self.cdp_url, "browser": version.get("Browser", "")}

    async def _cdp(self) -> CdpConnection:
        """The browser-level connection, (re)opened when missing or lost."""
        if self._connection is not None and not self._connection.closed:
            return self._connection
        async with self._lock:
            if self._connection is None or self._connection.closed:
                if self._connection is not None:
                    await self._connection.aclose()
                self._connection = None
                self._sessions.clear()
                self._input.release_all()
                version = await self.version()
                self._connection = await CdpConnection.open(version["webSocketDebuggerUrl"], self._on_event)
            return self._connection

    def _on_event(self, method: str, params: dict[str, Any], session_id: str | None) -> None:
        if method == "Target.detachedFromTarget":
            self._sessions.pop(params.get("targetId", ""), None)

    # -- the current page ----------------------------------------------------------------------

    async def _current_page(self) -> PageSession:
        """The page on display: Chromium lists pages most recently active first. With no page
        open a blank one is opened, as a desktop browser shows an empty window."""
        cdp = await self._cdp()
        targets = await self._get_json("/json/list")
        target_id = next((t["id"] for t in targets if t.get("type") == "page"), None)
        if target_id is None:
            target_id = (await cdp.call("Target.createTarget", {"url": "about:blank"}))["targetId"]
        session = self._sessions.get(target_id)
        if session is not None:
            return session
        async with self._lock:
            session = self._sessions.get(target_id)
            if session is None:
                attached = await cdp.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
                session = PageSession(target_id, attached["sessionId"], 1.0)
                metrics = await self._evaluate(cdp, session, _PAGE_METRICS)
                session = PageSession(target_id, session.session_id, float(metrics[2]) or 1.0)
                self._sessions[target_id] = session
        return session

    async def _evaluate(self, cdp: CdpConnection, page: PageSession, expression: str) -> Any:
        reply = await cdp.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            session_id=page.session_id,
            within=10.0,
        )
        if "exceptionDetails" in reply:
            raise BrowserError(f"page script failed: {reply['exceptionDetails'].get('text', '')}")
        return reply["result"].get("value")

    async def _on_page(self, method: str, params: dict[str, Any], within: float = 30.0) -> dict[str, Any]:
        """One command on the current page; a page that went away meanwhile is picked again once."""
        cdp = await self._cdp()
        page = await self._current_page()
        try:
            return await cdp.call(method, params, session_id=page.session_id, within=within)
        except CdpError:
            self._sessions.pop(page.target_id, None)
        page = await self._current_page()
        return await cdp.call(method, params, session_id=page.session_id, within=within)

    async def _page_metrics(self) -> tuple[dict[str, int], str, PageSession]:
        cdp = await self._cdp()
        page = await self._current_page()
        width, height, scale, user_agent = await self._evaluate(cdp, page, _PAGE_METRICS)
        viewport = {"width": round(width * scale), "height": round(height * scale)}
        return viewport, user_agent, page

    # -- operations ----------------------------------------------------------------------------

    @_names_failures("browser config")
    async def viewport(self) -> dict[str, int]:
        """The display size in screenshot pixels."""
        return (await self._page_metrics())[0]

    @_names_failures("browser info")
    async def info(self) -> BrowserInfo:
        """Where the browser's DevTools socket is, its user agent and display size; the doors turn
        them into the URLs a caller uses (see :mod:`agentbox_gateway.doors.shared.browser_links`)."""
        version = await self.version()
        viewport, user_agent, _ = await self._page_metrics()
        return BrowserInfo(urlsplit(version["webSocketDebuggerUrl"]).path, user_agent, viewport, self.vnc_enabled)

    @_names_failures("screenshot")
    async def screenshot(self) -> Screenshot:
        """A PNG of the browser's display: the whole screen when there is one (tabs, address bar,
        dialogs), else the page currently shown, at its viewport size."""
        if self._display is not None:
            await self._launcher.ensure()
            width, height, png = await self._display.screenshot()
            return Screenshot(base64.b64encode(png).decode(), width, height)
        reply = await self._on_page("Page.captureScreenshot", {"format": "png"}, within=SCREENSHOT_TIMEOUT)
        data = reply["data"]
        width, height = png_size(data)
        return Screenshot(data, width, height)

    @_names_failures("action")
    async def execute_action(self, raw: Any) -> str:
        """Validate and perform one GUI action; returns what was done (``action_performed``)."""
        action = raw if isinstance(raw, Action) else parse_action(raw)
        if action.action_type == "WAIT":  # holds no input lock, but still needs a browser to wait on
            await self.version()
            await asyncio.sleep(action.duration)
            return f"Waited {action.duration:g} seconds"
        if self._display is not None:
            async with self.display_input() as driver:
                return await driver.perform(action)
        async with self._input_lock:
            cdp = await self._cdp()
            page = await self._current_page()

            async def send(method: str, params: dict[str, Any]) -> dict[str, Any]:
                return await cdp.call(method, params, session_id=page.session_id, within=30.0)

            async def send_all(commands: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
                return await cdp.call_all(commands, session_id=page.session_id, within=30.0)

            try:
                return await InputDriver(self._input, send, send_all, page.scale).perform(action)
            except CdpError:
                self._sessions.pop(page.target_id, None)
                raise

    @contextlib.asynccontextmanager
    async def display_input(self) -> AsyncIterator[XInputDriver]:
        """The display's input, held for the caller alone: no other GUI action (of any door) runs
        until the block ends, so a batch of actions is applied without another client's between them."""
        if self._display is None:
            raise BrowserUnavailable("the sandbox has no display (DISABLE_VNC=true or no AGENTBOX_DISPLAY)")
        await self._launcher.ensure()
        async with self._input_lock:
            from .xdisplay import XInputDriver

            yield XInputDriver(self._input, self._display)

    @property
    def display(self) -> XDisplay | None:
        """The display the GUI tools act on, or None when there is none (the page, by CDP)."""
        return self._display

    async def ready_display(self) -> XDisplay | None:
        """:attr:`display`, started first when it waits for its first use (``BROWSER_START_MODE=manual``)."""
        if self._display is not None:
            await self._launcher.ensure()
        return self._display

    async def reload_proxy_settings(self, done: asyncio.Event, within: float) -> bool:
        """Make Chromium fetch its PAC file again now; True once ``done`` is set (by whoever serves the
        file), False after ``within`` seconds. No DevTools command does it; the "Re-apply settings"
        button of ``chrome://net-internals/#proxy`` does, so a background tab presses it (again, until
        the page has wired it up) and is closed. It is in the default context: proxy settings are per
        profile. A browser not started yet (``BROWSER_START_MODE=manual``) is not started for this:
        it reads the settings when it starts."""
        if not self._launcher.requested:
            raise BrowserUnavailable("not started yet (BROWSER_START_MODE=manual)")
        cdp = await self._cdp()
        created = await cdp.call("Target.createTarget", {"url": _NET_INTERNALS, "background": True})
        target_id = created["targetId"]
        deadline = time.monotonic() + within
        try:
            attached = await cdp.call("Target.attachToTarget", {"targetId": target_id, "flatten": True})
            page = PageSession(target_id, attached["sessionId"], 1.0)
            while time.monotonic() < deadline:
                await self._evaluate(cdp, page, _PRESS_RELOAD)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), 0.25)
                    return True
            return False
        finally:
            with contextlib.suppress(BrowserError):
                await cdp.call("Target.closeTarget", {"targetId": target_id}, within=5.0)

    @_names_failures("browser config")
    async def set_viewport(self, width: int, height: int) -> dict[str, int]:
        """Resize the browser window so the page area is ``width`` x ``height`` screenshot pixels."""
        if (width, height) not in RESOLUTIONS:
            allowed = ", ".join(f"{w}x{h}" for w, h in sorted(RESOLUTIONS, reverse=True))
            raise InvalidAction(f"resolution {width}x{height} is not one of {allowed}", "resolution")
        cdp = await self._cdp()
        viewport, _, page = await self._page_metrics()
        window = await cdp.call("Browser.getWindowForTarget", {"targetId": page.target_id})
        bounds = window["bounds"]
        if bounds.get("windowState", "normal") != "normal":
            await cdp.call(
                "Browser.setWindowBounds", {"windowId": window["windowId"], "bounds": {"windowState": "normal"}}
            )
        # The window is larger than the page by its (possibly simulated) toolbars.
        extra_w = bounds["width"] - round(viewport["width"] / page.scale)
        extra_h = bounds["height"] - round(viewport["height"] / page.scale)
        await cdp.call(
            "Browser.setWindowBounds",
            {
                "windowId": window["windowId"],
                "bounds": {
                    "width": round(width / page.scale) + extra_w,
                    "height": round(height / page.scale) + extra_h,
                },
            },
        )
        for _ in range(20):  # the renderer learns its new size asynchronously
            viewport, _, _ = await self._page_metrics()
            if viewport == {"width": width, "height": height}:
                break
            await asyncio.sleep(0.05)
        return viewport
