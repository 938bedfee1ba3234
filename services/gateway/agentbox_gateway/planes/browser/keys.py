"""Key names as agents send them (``enter``, ``ctrl``, ``PageDown``, ``a``) resolved to the
DevTools ``Input.dispatchKeyEvent`` fields of a US keyboard, so synthetic keys look like real ones
to pages (``key``, ``code`` and ``keyCode`` all set, text only for printable keys)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidAction

#: ``modifiers`` bits of ``Input.dispatch*Event``.
MODIFIER_BITS = {"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8}


@dataclass(frozen=True)
class KeyDef:
    key: str
    code: str
    key_code: int
    text: str = ""
    location: int = 0

    @property
    def is_modifier(self) -> bool:
        return self.key in MODIFIER_BITS


def _named_keys() -> dict[str, KeyDef]:
    keys = [
        KeyDef("Enter", "Enter", 13, "\r"),
        KeyDef("Tab", "Tab", 9),
        KeyDef("Backspace", "Backspace", 8),
        KeyDef("Escape", "Escape", 27),
        KeyDef("Delete", "Delete", 46),
        KeyDef("Insert", "Insert", 45),
        KeyDef("Home", "Home", 36),
        KeyDef("End", "End", 35),
        KeyDef("PageUp", "PageUp", 33),
        KeyDef("PageDown", "PageDown", 34),
        KeyDef("ArrowLeft", "ArrowLeft", 37),
        KeyDef("ArrowUp", "ArrowUp", 38),
        KeyDef("ArrowRight", "ArrowRight", 39),
        KeyDef("ArrowDown", "ArrowDown", 40),
        KeyDef("CapsLock", "CapsLock", 20),
        KeyDef("Shift", "ShiftLeft", 16, location=1),
        KeyDef("Control", "ControlLeft", 17, location=1),
        KeyDef("Alt", "AltLeft", 18, location=1),
        KeyDef("Meta", "MetaLeft", 91, location=1),
        KeyDef("ContextMenu", "ContextMenu", 93),
        *(KeyDef(f"F{n}", f"F{n}", 111 + n) for n in range(1, 13)),
    ]
    return {k.key.lower(): k for k in keys}


#: Other spellings in use (pyautogui / xdotool names, short forms).
_ALIASES = {
    "return": "enter",
    "esc": "escape",
    "del": "delete",
    "ins": "insert",
    "pgup": "pageup",
    "pgdn": "pagedown",
    "page_up": "pageup",
    "page_down": "pagedown",
    "left": "arrowleft",
    "up": "arrowup",
    "right": "arrowright",
    "down": "arrowdown",
    "ctrl": "control",
    "control_l": "control",
    "ctrl_l": "control",
    "shift_l": "shift",
    "alt_l": "alt",
    "option": "alt",
    "cmd": "meta",
    "command": "meta",
    "super": "meta",
    "win": "meta",
    "windows": "meta",
    "super_l": "meta",
    "back_space": "backspace",
    "apps": "contextmenu",
    "menu": "contextmenu",
    "capital": "capslock",
}

#: (code, keyCode, unshifted, shifted) for the printable keys that are not letters or digits.
_PUNCTUATION = [
    ("Backquote", 192, "`", "~"),
    ("Minus", 189, "-", "_"),
    ("Equal", 187, "=", "+"),
    ("BracketLeft", 219, "[", "{"),
    ("BracketRight", 221, "]", "}"),
    ("Backslash", 220, "\\", "|"),
    ("Semicolon", 186, ";", ":"),
    ("Quote", 222, "'", '"'),
    ("Comma", 188, ",", "<"),
    ("Period", 190, ".", ">"),
    ("Slash", 191, "/", "?"),
]


def _printable_pairs() -> list[tuple[KeyDef, KeyDef]]:
    """(unshifted, shifted) definitions of every printable key."""
    pairs = [(KeyDef(" ", "Space", 32, " "), KeyDef(" ", "Space", 32, " "))]
    for letter in "abcdefghijklmnopqrstuvwxyz":
        code, key_code = f"Key{letter.upper()}", ord(letter.upper())
        upper = letter.upper()
        pairs.append((KeyDef(letter, code, key_code, letter), KeyDef(upper, code, key_code, upper)))
    for digit, shifted in zip("0123456789", ")!@#$%^&*(", strict=True):
        code = f"Digit{digit}"
        pairs.append((KeyDef(digit, code, ord(digit), digit), KeyDef(shifted, code, ord(digit), shifted)))
    for code, key_code, plain, shifted in _PUNCTUATION:
        pairs.append((KeyDef(plain, code, key_code, plain), KeyDef(shifted, code, key_code, shifted)))
    return pairs


NAMED_KEYS = _named_keys()
PRINTABLE_KEYS = {key.key: key for pair in _printable_pairs() for key in pair}
_SHIFTED = {plain.key: shifted for plain, shifted in _printable_pairs()}


def with_shift(key: KeyDef) -> KeyDef:
    """What ``key`` types while Shift is held (``a`` -> ``A``, ``1`` -> ``!``)."""
    return _SHIFTED.get(key.key, key)


def printable(char: str) -> KeyDef | None:
    """The key that types ``char`` on a US layout, or None (the character is inserted as text)."""
    return PRINTABLE_KEYS.get(char)


def resolve_key(name: str) -> KeyDef:
    """One key by name; raise :class:`InvalidAction` for a name no keyboard has."""
    if len(name) == 1:
        found = PRINTABLE_KEYS.get(name)
        if found:
            return found
    lowered = name.strip().lower()
    if lowered == "space":
        return PRINTABLE_KEYS[" "]
    lowered = _ALIASES.get(lowered, lowered)
    if lowered in NAMED_KEYS:
        return NAMED_KEYS[lowered]
    raise InvalidAction(f"unknown key: {name!r}", "key")


def resolve_combo(name: str) -> list[KeyDef]:
    """``ctrl+shift+t`` style combinations (a single key is a combination of one); ``+`` alone is a key."""
    if len(name) > 1 and "+" in name.strip("+"):
        return [resolve_key(part) for part in name.split("+")]
    return [resolve_key(name)]
