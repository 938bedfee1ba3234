"""The display's top-level windows and pointer, read and changed through Xlib. The sandbox's display
has no window manager, so what one would do is done here: activating a window maps it, raises it and
gives it the input focus; minimizing one unmaps it and marks it iconic (``WM_STATE``), as ICCCM says."""

from __future__ import annotations

import itertools
from typing import Any

import anyio.to_thread
from Xlib import X, Xatom
from Xlib.error import BadWindow

from ..browser.xdisplay import XDisplay
from .errors import WindowNotFound
from .model import Window, WindowList

#: The most windows one listing returns.
MAX_WINDOWS = 200
_ICONIC = 3
_NORMAL = 1
_snapshots = itertools.count(1)


def _property(display: Any, window: Any, name: str, kind: int) -> Any:
    reply = window.get_full_property(display.intern_atom(name), kind)
    return None if reply is None else reply.value


def _title(display: Any, window: Any) -> str:
    title = _property(display, window, "_NET_WM_NAME", display.intern_atom("UTF8_STRING"))
    if title is None:
        title = _property(display, window, "WM_NAME", Xatom.STRING)
    if isinstance(title, bytes):
        return title.decode(errors="replace")
    return str(title or "")


def _wm_state(display: Any, window: Any) -> int | None:
    state = _property(display, window, "WM_STATE", display.intern_atom("WM_STATE"))
    return int(state[0]) if state is not None and len(state) else None


def _list(display: Any) -> list[Window]:
    root = display.screen().root
    windows: list[Window] = []
    for window in root.query_tree().children:
        try:
            attributes = window.get_attributes()
            if attributes.override_redirect:
                continue  # menus and tooltips, not windows a person switches between
            iconic = _wm_state(display, window) == _ICONIC
            if attributes.map_state != X.IsViewable and not iconic:
                continue
            title = _title(display, window)
            geometry = window.get_geometry()
            origin = window.translate_coords(root, 0, 0)
            pid = _property(display, window, "_NET_WM_PID", Xatom.CARDINAL)
        except BadWindow:
            continue  # closed while listed
        bounds = {"x": -origin.x, "y": -origin.y, "width": geometry.width, "height": geometry.height}
        windows.append(Window(window.id, title, int(pid[0]) if pid else None, bounds, iconic))
        if len(windows) == MAX_WINDOWS:
            break
    return windows


def _top_level(display: Any, window_id: int) -> Any:
    if window_id not in {w.id for w in display.screen().root.query_tree().children}:
        raise WindowNotFound(f"no top-level window {window_id} (list them again: it may have closed)")
    return display.create_resource_object("window", window_id)


def _set_wm_state(display: Any, window: Any, state: int) -> None:
    atom = display.intern_atom("WM_STATE")
    window.change_property(atom, atom, 32, [state, X.NONE])


def _activate(display: Any, window_id: int) -> str:
    window = _top_level(display, window_id)
    window.map()
    _set_wm_state(display, window, _NORMAL)
    window.configure(stack_mode=X.Above)
    display.sync()
    window.set_input_focus(X.RevertToParent, X.CurrentTime)
    display.sync()
    return f"Activated window {window_id} ({_title(display, window)!r})"


def _minimize(display: Any, window_id: int) -> str:
    window = _top_level(display, window_id)
    _set_wm_state(display, window, _ICONIC)
    window.unmap()
    display.sync()
    return f"Minimized window {window_id} ({_title(display, window)!r})"


def _pointer(display: Any) -> tuple[int, int]:
    reply = display.screen().root.query_pointer()
    return reply.root_x, reply.root_y


class Windows:
    def __init__(self, display: XDisplay) -> None:
        self.display = display

    async def list(self) -> WindowList:
        windows = await anyio.to_thread.run_sync(lambda: self.display.run(_list))
        return WindowList(next(_snapshots), windows)

    async def activate(self, window_id: int) -> str:
        return await anyio.to_thread.run_sync(lambda: self.display.run(lambda d: _activate(d, window_id)))

    async def minimize(self, window_id: int) -> str:
        return await anyio.to_thread.run_sync(lambda: self.display.run(lambda d: _minimize(d, window_id)))

    async def cursor(self) -> tuple[int, int]:
        return await anyio.to_thread.run_sync(lambda: self.display.run(_pointer))
