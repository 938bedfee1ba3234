"""The computer plane (``/v2/computer``): the sandbox's whole X display as a desktop an agent reads and
drives: screenshots, mouse and keyboard input (the browser plane's, on the same display and under the
same input lock), the clipboard, the windows, the accessibility tree with actions on its nodes, and
recordings (the display recording of ``/v1/display/record``). Without a display (``DISABLE_VNC=true``)
every operation is refused as unavailable, with a hint."""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentbox_common.errors import PlaneError

from ...settings import GatewaySettings
from ..browser import Action, BrowserPlane, BrowserUnavailable
from ..browser.keys import resolve_combo
from ..browser.page import PagePlane
from .actions import ComputerAction, DesktopAction, parse_batch, parse_computer_action
from .clipboard import Clipboard
from .errors import DisplayOff
from .model import Node, Tree, TreeQuery, WindowList

if TYPE_CHECKING:  # imported where used: Xlib and dbus-fast load with the first call on the display
    from ..browser.xdisplay import XDisplay, XInputDriver
    from .atspi import Accessibility
    from .windows import Windows

#: The recording parameters ``/v2/computer/record`` passes on (AIO's).
RECORD_FIELDS = ("action", "save_path", "fps", "crf", "max_duration", "width", "height")


@dataclass(frozen=True)
class ComputerInfo:
    available: bool
    display: str | None
    xauthority: str | None
    screen_resolution: dict[str, int | None]
    capabilities: dict[str, bool]
    warnings: list[str]


@dataclass(frozen=True)
class Capture:
    """A PNG of the whole screen; image and screen sizes are the same here (no scaling)."""

    png: bytes
    width: int
    height: int

    @property
    def data_base64(self) -> str:
        return base64.b64encode(self.png).decode()


@dataclass
class ActionsResult:
    """What a batch (or one action) did: ``performed`` in order, then the failure, if any, and the
    frame after the last action that ran (or why there is none)."""

    performed: list[str] = field(default_factory=list)
    failed_index: int | None = None
    error: str | None = None
    screenshot: Capture | None = None
    screenshot_error: str | None = None


def _said(error: PlaneError) -> str:
    return f"{error.message}: {error.hint}" if error.hint else error.message


class ComputerPlane:
    def __init__(self, settings: GatewaySettings, browser: BrowserPlane, page: PagePlane) -> None:
        self.settings = settings
        self._browser = browser
        self._page = page

    async def aclose(self) -> None:
        if "_accessibility" in self.__dict__:
            await self._accessibility.aclose()

    @functools.cached_property
    def _accessibility(self) -> Accessibility:
        from .atspi import Accessibility

        return Accessibility(self.settings.session_bus)

    def _display(self) -> XDisplay:
        display = self._browser.display
        if display is None:
            raise DisplayOff()
        return display

    async def _ready(self) -> XDisplay:
        """The display, started first if it waits for its first use; :class:`DisplayOff` without one."""
        display = await self._browser.ready_display()
        if display is None:
            raise DisplayOff()
        return display

    @functools.cached_property
    def _windows(self) -> Windows:
        from .windows import Windows

        return Windows(self._display())

    @functools.cached_property
    def _clipboard(self) -> Clipboard:
        return Clipboard(self._display().name)

    async def info(self) -> ComputerInfo:
        """What the display is and what works on it; never raises."""
        display = self._browser.display
        if display is None:
            return ComputerInfo(
                False,
                None,
                None,
                {"width": None, "height": None},
                dict.fromkeys(("screenshot", "actions", "clipboard", "recording", "accessibility"), False),
                ["the display is off (DISABLE_VNC=true)"],
            )
        warnings: list[str] = []
        resolution: dict[str, int | None] = {"width": None, "height": None}
        try:
            width, height = await asyncio.to_thread(display.size)
            resolution = {"width": width, "height": height}
        except BrowserUnavailable as exc:
            warnings.append(str(exc))
        clipboard = shutil.which("xclip") is not None
        if not clipboard:
            warnings.append("xclip is not installed: no clipboard")
        accessibility = bool(self.settings.session_bus)
        if not accessibility:
            warnings.append("no session D-Bus (AGENTBOX_SESSION_BUS): no accessibility tree")
        available = resolution["width"] is not None
        return ComputerInfo(
            available,
            display.name,
            os.environ.get("XAUTHORITY"),
            resolution,
            {
                "screenshot": available,
                "actions": available,
                "clipboard": available and clipboard,
                "recording": available and shutil.which("ffmpeg") is not None,
                "accessibility": available and accessibility,
            },
            warnings,
        )

    async def screenshot(self) -> Capture:
        display = await self._ready()
        width, height, png = await display.screenshot()
        return Capture(png, width, height)

    async def _perform(self, action: ComputerAction, driver: XInputDriver) -> str:
        """One action, with the display's input held by the caller."""
        if isinstance(action, Action):
            if action.action_type == "WAIT":
                await asyncio.sleep(action.duration)
                return f"Waited {action.duration:g} seconds"
            return await driver.perform(action)
        return await self._perform_desktop(action, driver)

    async def _perform_desktop(self, action: DesktopAction, driver: XInputDriver) -> str:
        kind = action.action_type
        if kind == "SET_CLIPBOARD":
            await self._clipboard.set(action.text)
            return f"Set the clipboard to {len(action.text)} characters"
        if kind == "WINDOW_ACTIVATE":
            return await self._windows.activate(action.window_id)
        if kind == "WINDOW_MINIMIZE":
            return await self._windows.minimize(action.window_id)
        if kind == "NODE_FOCUS":
            return await self._accessibility.focus(action.node_id)
        if kind == "NODE_INVOKE":
            return await self._accessibility.invoke(action.node_id, action.action)
        return await self._set_value(action.node_id, action.value, driver)

    async def _set_value(self, node_id: str, value: str, driver: XInputDriver) -> str:
        """Through the node's EditableText or Value interface; web text fields have neither, so
        there: focus it, select all it holds and type the value over it (Delete for an empty one)."""
        node = await self._accessibility.node(node_id)
        if await self._accessibility.set_text(node_id, value):
            return f"Set the value of the {node.role} {node.name!r}"
        await self._accessibility.focus(node_id)
        await driver.combo(tuple(resolve_combo("ctrl+a")))
        if value:
            await driver.type_text(value, True)
        else:
            await driver.combo(tuple(resolve_combo("Delete")))
        # Keys reach the page through the browser, an accessibility action directly: the next action
        # (an invoke of the form's button) waits until the field holds the value (a password field
        # shows bullets instead: not read).
        if node.role != "password text":
            await self._accessibility.wait_for_text(node_id, value)
        return f"Set the value of the {node.role} {node.name!r} by typing {len(value)} characters"

    async def _after(self, result: ActionsResult, include_screenshot: bool) -> ActionsResult:
        if include_screenshot:
            try:
                result.screenshot = await self.screenshot()
            except PlaneError as exc:
                result.screenshot_error = _said(exc)
        return result

    async def execute(self, raw: Any, include_screenshot: bool = False) -> ActionsResult:
        """One action; its error is raised (nothing to report it beside)."""
        action = parse_computer_action(raw)
        await self._ready()
        async with self._browser.display_input() as driver:
            performed = await self._perform(action, driver)
        return await self._after(ActionsResult([performed]), include_screenshot)

    async def execute_batch(self, raw: Any, include_screenshot: bool = False) -> ActionsResult:
        """Up to 50 actions in order, all checked first, with the display's input held throughout: no
        other client's action runs between them. A failing action stops the batch; what ran before
        it stays done (``failed_index``, ``error``)."""
        actions = parse_batch(raw)
        await self._ready()
        result = ActionsResult()
        async with self._browser.display_input() as driver:
            for index, action in enumerate(actions):
                try:
                    result.performed.append(await self._perform(action, driver))
                except PlaneError as exc:
                    result.failed_index, result.error = index, _said(exc)
                    break
        return await self._after(result, include_screenshot)

    async def cursor(self) -> tuple[int, int]:
        await self._ready()
        return await self._windows.cursor()

    async def clipboard(self) -> str:
        await self._ready()
        return await self._clipboard.get()

    async def set_clipboard(self, text: str) -> None:
        await self._ready()
        await self._clipboard.set(text)

    async def windows(self) -> WindowList:
        await self._ready()
        return await self._windows.list()

    async def activate_window(self, window_id: int) -> str:
        await self._ready()
        async with self._browser.display_input():
            return await self._windows.activate(window_id)

    async def accessibility(self, query: TreeQuery) -> Tree:
        await self._ready()
        return await self._accessibility.tree(query)

    async def node(self, node_id: str) -> Node:
        await self._ready()
        return await self._accessibility.node(node_id)

    async def record(self, arguments: dict[str, Any]) -> Any:
        """``start`` / ``status`` / ``stop`` a recording of the display: the one ``/v1/display/record``
        makes (ffmpeg, one at a time, bounded length)."""
        await self._ready()
        return await self._page.call("display_record", {k: v for k, v in arguments.items() if k in RECORD_FIELDS})
