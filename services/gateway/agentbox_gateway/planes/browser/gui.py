"""GUI input as a person would produce it: mouse and keyboard events dispatched through
``Input.dispatchMouseEvent`` / ``dispatchKeyEvent`` at screenshot coordinates. The pointer position,
held buttons and held modifiers persist between actions, as on a real display, so ``MOUSE_DOWN`` +
``MOVE_TO`` + ``MOUSE_UP`` drags and ``KEY_DOWN shift`` + ``CLICK`` shift-clicks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .actions import Action
from .keys import MODIFIER_BITS, NAMED_KEYS, KeyDef, printable, with_shift

Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
SendAll = Callable[[list[tuple[str, dict[str, Any]]]], Awaitable[list[dict[str, Any]]]]

_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}
#: Pixels per wheel notch (Chromium's default for one mouse-wheel detent).
NOTCH_PIXELS = 100
DRAG_STEPS = 10
#: Typed keys go to Chromium in batches of this many events (two per key), not one round trip each.
TYPING_BATCH = 400
_TYPED_CONTROLS = {"\n": NAMED_KEYS["enter"], "\r": NAMED_KEYS["enter"], "\t": NAMED_KEYS["tab"]}


@dataclass
class InputState:
    """Where the pointer is (screenshot pixels) and what is held down."""

    x: float = 0.0
    y: float = 0.0
    buttons: list[str] = field(default_factory=list)
    modifiers: set[str] = field(default_factory=set)

    def release_all(self) -> None:
        self.buttons.clear()
        self.modifiers.clear()


def _xy(x: float, y: float) -> str:
    return f"({x:g}, {y:g})"


class InputDriver:
    """Performs one :class:`Action` on a page; ``scale`` is the device pixel ratio."""

    def __init__(self, state: InputState, send: Send, send_all: SendAll, scale: float) -> None:
        self.state = state
        self.send = send
        self.send_all = send_all
        self.scale = scale or 1.0

    @property
    def _modifier_bits(self) -> int:
        return sum(MODIFIER_BITS[name] for name in self.state.modifiers)

    async def _mouse(self, kind: str, button: str = "none", clicks: int = 0, **extra: Any) -> None:
        await self.send(
            "Input.dispatchMouseEvent",
            {
                "type": kind,
                "x": self.state.x / self.scale,
                "y": self.state.y / self.scale,
                "button": button,
                "buttons": sum(_BUTTON_BITS[b] for b in self.state.buttons),
                "clickCount": clicks,
                "modifiers": self._modifier_bits,
                **extra,
            },
        )

    async def move(self, x: float, y: float, steps: int = 1) -> None:
        start_x, start_y = self.state.x, self.state.y
        held = self.state.buttons[0] if self.state.buttons else "none"
        for step in range(1, steps + 1):
            self.state.x = start_x + (x - start_x) * step / steps
            self.state.y = start_y + (y - start_y) * step / steps
            await self._mouse("mouseMoved", held)

    async def down(self, button: str, clicks: int = 1) -> None:
        if button not in self.state.buttons:
            self.state.buttons.append(button)
        await self._mouse("mousePressed", button, clicks)

    async def up(self, button: str, clicks: int = 1) -> None:
        if button in self.state.buttons:
            self.state.buttons.remove(button)
        await self._mouse("mouseReleased", button, clicks)

    def _key_event(self, kind: str, key: KeyDef) -> dict[str, Any]:
        """A key event, updating the held modifiers as a keyboard does (down adds, up removes)."""
        if kind == "keyDown" and key.is_modifier:
            self.state.modifiers.add(key.key)
        if "Shift" in self.state.modifiers:
            key = with_shift(key)
        if kind == "keyUp":
            self.state.modifiers.discard(key.key)
        event = {
            "type": kind,
            "key": key.key,
            "code": key.code,
            "windowsVirtualKeyCode": key.key_code,
            "nativeVirtualKeyCode": key.key_code,
            "location": key.location,
            "modifiers": self._modifier_bits,
        }
        # With Control, Alt or Meta held a key is a shortcut and types nothing.
        if kind == "keyDown":
            text = key.text if not (self.state.modifiers - {"Shift"}) else ""
            event.update(type="keyDown" if text else "rawKeyDown", text=text, unmodifiedText=text)
        return event

    async def key_down(self, key: KeyDef) -> None:
        await self.send("Input.dispatchKeyEvent", self._key_event("keyDown", key))

    async def key_up(self, key: KeyDef) -> None:
        await self.send("Input.dispatchKeyEvent", self._key_event("keyUp", key))

    async def combo(self, keys: tuple[KeyDef, ...]) -> None:
        """Press keys in order and release them in reverse (``ctrl+shift+t``)."""
        for key in keys:
            await self.key_down(key)
        for key in reversed(keys):
            await self.key_up(key)

    async def type_text(self, text: str, paste_others: bool) -> None:
        """Key by key, as a keyboard types. Characters a US keyboard has no key for are inserted
        as text, the way a paste or an input method delivers them (``use_clipboard``, the default),
        or else sent as key events carrying the character."""
        events: list[tuple[str, dict[str, Any]]] = []
        pending: list[str] = []
        for char in text:
            key = _TYPED_CONTROLS.get(char) or printable(char)
            if key is None and paste_others:
                pending.append(char)
                continue
            if pending:
                events.append(("Input.insertText", {"text": "".join(pending)}))
                pending.clear()
            key = key or KeyDef(char, "", 0, char)
            events.append(("Input.dispatchKeyEvent", self._key_event("keyDown", key)))
            events.append(("Input.dispatchKeyEvent", self._key_event("keyUp", key)))
        if pending:
            events.append(("Input.insertText", {"text": "".join(pending)}))
        for start in range(0, len(events), TYPING_BATCH):
            await self.send_all(events[start : start + TYPING_BATCH])

    async def perform(self, action: Action) -> str:
        """Carry out ``action``; returns the ``action_performed`` sentence."""
        kind, state = action.action_type, self.state
        if kind == "MOVE_TO":
            await self.move(*(action.point or (state.x, state.y)))
            return f"Moved the mouse to {_xy(state.x, state.y)}"
        if kind == "MOVE_REL":
            await self.move(max(0.0, state.x + action.x_offset), max(0.0, state.y + action.y_offset))
            return f"Moved the mouse to {_xy(state.x, state.y)}"
        if kind in ("CLICK", "DOUBLE_CLICK", "RIGHT_CLICK"):
            if action.point is not None:
                await self.move(*action.point)
            for count in range(1, action.num_clicks + 1):
                await self.down(action.button, count)
                await self.up(action.button, count)
            times = "" if action.num_clicks == 1 else f" {action.num_clicks} times"
            return f"Clicked the {action.button} button{times} at {_xy(state.x, state.y)}"
        if kind == "MOUSE_DOWN":
            await self.down(action.button)
            return f"Pressed the {action.button} button at {_xy(state.x, state.y)}"
        if kind == "MOUSE_UP":
            await self.up(action.button)
            return f"Released the {action.button} button at {_xy(state.x, state.y)}"
        if kind in ("DRAG_TO", "DRAG_REL"):
            start = _xy(state.x, state.y)
            if kind == "DRAG_TO":
                target = action.point or (state.x, state.y)
            else:
                target = (max(0.0, state.x + action.x_offset), max(0.0, state.y + action.y_offset))
            await self.down("left")
            await self.move(*target, steps=DRAG_STEPS)
            await self.up("left")
            return f"Dragged from {start} to {_xy(state.x, state.y)}"
        if kind == "SCROLL":
            await self._mouse("mouseWheel", deltaX=action.dx * NOTCH_PIXELS, deltaY=action.dy * NOTCH_PIXELS)
            return f"Scrolled dx={action.dx}, dy={action.dy} notches at {_xy(state.x, state.y)}"
        if kind == "TYPING":
            await self.type_text(action.text, action.use_clipboard)
            return f"Typed {len(action.text)} characters"
        names = "+".join(key.key if key.key != " " else "Space" for key in action.keys)
        if kind in ("PRESS", "HOTKEY"):
            await self.combo(action.keys)
            return f"Pressed {names}"
        if kind == "KEY_DOWN":
            await self.key_down(action.keys[0])
            return f"Holding {names} down"
        if kind == "KEY_UP":
            await self.key_up(action.keys[0])
            return f"Released {names}"
        raise ValueError(f"{kind} is not an input action")  # WAIT is the plane's: it needs no page
