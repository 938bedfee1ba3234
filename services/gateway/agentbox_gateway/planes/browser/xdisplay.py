"""The GUI tools on a real X display (the image's Xvfb, which the live view shows): screenshots of
the whole screen (the browser window with its tabs, address bar and dialogs) and input through the
XTEST extension, which X clients cannot tell from a real mouse and keyboard. Used instead of the
DevTools input events when the gateway has a display (see ``GatewaySettings.vnc_enabled``).

:class:`XInputDriver` reuses :class:`~.gui.InputDriver`'s action logic (clicks, drags, combos) and
replaces only its primitives; the X server itself keeps which buttons and modifiers are held."""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
from Xlib import XK, X
from Xlib import display as xlib_display
from Xlib.error import DisplayError, XError
from Xlib.ext import xtest

from .errors import BrowserError, BrowserUnavailable
from .gui import InputDriver, InputState
from .keys import KeyDef

T = TypeVar("T")

#: X keysym names of the named keys (``KeyDef.key``), where they differ or exist.
_KEYSYM_NAMES = {
    "Enter": "Return",
    "Backspace": "BackSpace",
    "PageUp": "Prior",
    "PageDown": "Next",
    "ArrowLeft": "Left",
    "ArrowUp": "Up",
    "ArrowRight": "Right",
    "ArrowDown": "Down",
    "CapsLock": "Caps_Lock",
    "Shift": "Shift_L",
    "Control": "Control_L",
    "Alt": "Alt_L",
    "Meta": "Super_L",
    "ContextMenu": "Menu",
}
_BUTTONS = {"left": 1, "middle": 2, "right": 3}
#: Wheel "buttons": up, down, left, right.
_WHEEL = {(0, -1): 4, (0, 1): 5, (-1, 0): 6, (1, 0): 7}
_PNG_LEVEL = 3
#: Seconds a temporary key mapping is given to reach the clients (xdotool waits likewise).
_REMAP_SETTLE = 0.05


def png_rgb(width: int, height: int, rgb: bytes) -> bytes:
    """A PNG of ``rgb`` (``width`` x ``height``, 3 bytes a pixel, rows top to bottom)."""
    stride = width * 3
    raw = b"".join(b"\x00" + rgb[row * stride : (row + 1) * stride] for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, _PNG_LEVEL))
        + chunk(b"IEND", b"")
    )


class XDisplay:
    """One connection to the display, opened on first use and again after an error."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._display: Any = None

    def _connect(self) -> Any:
        if self._display is None:
            try:
                self._display = xlib_display.Display(self.name)
            except (DisplayError, OSError) as exc:
                raise BrowserUnavailable(f"the display {self.name} is not reachable: {exc}") from exc
            if not self._display.query_extension("XTEST"):
                raise BrowserError(f"the display {self.name} has no XTEST extension")
        return self._display

    def _forget(self) -> None:
        if self._display is not None:
            try:
                self._display.close()
            except Exception:  # a dead connection may fail to close; it is dropped either way
                pass
        self._display = None

    def run(self, work: Callable[[Any], T]) -> T:
        """``work(display)``; a broken connection is reopened next time."""
        try:
            return work(self._connect())
        except (XError, OSError, ConnectionError) as exc:
            self._forget()
            raise BrowserUnavailable(f"the display {self.name} failed: {exc}") from exc

    def size(self) -> tuple[int, int]:
        screen = self.run(lambda d: d.screen())
        return screen.width_in_pixels, screen.height_in_pixels

    def _capture(self, display: Any) -> tuple[int, int, bytes]:
        root = display.screen().root
        geometry = root.get_geometry()
        width, height = geometry.width, geometry.height
        image = root.get_image(0, 0, width, height, X.ZPixmap, 0xFFFFFFFF)
        data = image.data if isinstance(image.data, bytes) else bytes(image.data)
        rgb = bytearray(width * height * 3)
        rgb[0::3], rgb[1::3], rgb[2::3] = data[2::4], data[1::4], data[0::4]  # BGRX, little-endian
        return width, height, png_rgb(width, height, bytes(rgb))

    async def screenshot(self) -> tuple[int, int, bytes]:
        """``(width, height, png)`` of the whole screen."""
        return await anyio.to_thread.run_sync(lambda: self.run(self._capture))


class XInputDriver(InputDriver):
    """:class:`InputDriver` with real X input: coordinates are screen pixels."""

    def __init__(self, state: InputState, display: XDisplay) -> None:
        super().__init__(state, self._unused, self._unused, 1.0)
        self.display = display

    @staticmethod
    async def _unused(*_: Any) -> Any:
        raise AssertionError("the X driver sends no DevTools commands")

    def _fake(self, event: int, detail: int = 0, **position: int) -> None:
        def send(display: Any) -> None:
            xtest.fake_input(display, event, detail, **position)
            display.sync()

        self.display.run(send)

    async def _mouse(self, kind: str, button: str = "none", clicks: int = 0, **extra: Any) -> None:
        if kind == "mouseMoved":
            self._fake(X.MotionNotify, x=round(self.state.x), y=round(self.state.y))
        elif kind in ("mousePressed", "mouseReleased"):
            self._fake(X.ButtonPress if kind == "mousePressed" else X.ButtonRelease, _BUTTONS[button])
        elif kind == "mouseWheel":
            for axis, delta in ((0, extra["deltaX"]), (1, extra["deltaY"])):
                notches = round(delta / 100)
                if notches:
                    step = (1 if notches > 0 else -1, 0) if axis == 0 else (0, 1 if notches > 0 else -1)
                    for _ in range(abs(notches)):
                        self._fake(X.ButtonPress, _WHEEL[step])
                        self._fake(X.ButtonRelease, _WHEEL[step])

    def _keycode(self, keysym: int) -> tuple[int, bool]:
        """The keycode typing ``keysym`` and whether it needs Shift; 0 when no key has it."""

        def find(display: Any) -> tuple[int, bool]:
            keycode = display.keysym_to_keycode(keysym)
            return keycode, bool(keycode) and display.keycode_to_keysym(keycode, 0) != keysym

        return self.display.run(find)

    @staticmethod
    def _keysym(key: KeyDef) -> int:
        if len(key.key) == 1:
            return ord(key.key) if ord(key.key) < 0x100 else 0x01000000 + ord(key.key)
        keysym: int = XK.string_to_keysym(_KEYSYM_NAMES.get(key.key, key.key))  # Xlib is untyped
        return keysym

    async def key_down(self, key: KeyDef) -> None:
        keycode, _ = self._keycode(self._keysym(key))
        if not keycode:
            raise BrowserError(f"the display's keyboard has no key {key.key!r}")
        self._fake(X.KeyPress, keycode)

    async def key_up(self, key: KeyDef) -> None:
        keycode, _ = self._keycode(self._keysym(key))
        if keycode:
            self._fake(X.KeyRelease, keycode)

    def _type_char(self, char: str) -> None:
        keysym = ord(char) if ord(char) < 0x100 else 0x01000000 + ord(char)
        keysym = {"\n": XK.XK_Return, "\r": XK.XK_Return, "\t": XK.XK_Tab}.get(char, keysym)
        keycode, shifted = self._keycode(keysym)
        if not keycode:
            self._type_remapped(keysym)
            return
        shift = self._keycode(XK.XK_Shift_L)[0] if shifted else 0
        if shift:
            self._fake(X.KeyPress, shift)
        self._fake(X.KeyPress, keycode)
        self._fake(X.KeyRelease, keycode)
        if shift:
            self._fake(X.KeyRelease, shift)

    def _type_remapped(self, keysym: int) -> None:
        """Type a character no key has, through a spare keycode mapped to it for the moment (as
        xdotool does)."""

        def remap(display: Any) -> int:
            first = display.display.info.min_keycode
            count = display.display.info.max_keycode - first + 1
            mapping = display.get_keyboard_mapping(first, count)
            spare = next((first + i for i, syms in enumerate(mapping) if not any(syms)), 0)
            if not spare:
                raise BrowserError("the display's keyboard has no spare key to type this character with")
            display.change_keyboard_mapping(spare, [(keysym, keysym)])
            display.sync()
            return spare

        spare = self.display.run(remap)
        try:
            time.sleep(_REMAP_SETTLE)  # clients re-read the keyboard mapping before the key arrives
            self._fake(X.KeyPress, spare)
            self._fake(X.KeyRelease, spare)
            time.sleep(_REMAP_SETTLE)  # ... and translate it before the mapping is taken back
        finally:

            def restore(display: Any) -> None:
                display.change_keyboard_mapping(spare, [(X.NoSymbol, X.NoSymbol)])
                display.sync()

            self.display.run(restore)

    async def type_text(self, text: str, paste_others: bool) -> None:
        def type_all() -> None:
            for char in text:
                self._type_char(char)

        await anyio.to_thread.run_sync(type_all)
