"""The computer plane's errors, each of one :class:`~agentbox_common.errors.ErrorKind`, which is all a
door needs to answer it (REST: the envelope with the kind's status; MCP: an ``isError`` text)."""

from __future__ import annotations

from agentbox_common.errors import Invalid, NotFound, PlaneError, TimedOut, TooLarge, Unavailable

#: What to do when the display is off, said wherever the plane refuses for it.
DISPLAY_OFF_HINT = "the display is off (DISABLE_VNC=true): start the sandbox without it to use the computer tools"


class ComputerError(PlaneError):
    """The display answered, but the operation failed (a program it runs failed or said no)."""


class DisplayOff(Unavailable, ComputerError):
    """The sandbox has no display to act on."""

    def __init__(self) -> None:
        super().__init__("No display: the computer tools need the sandbox's X display", hint=DISPLAY_OFF_HINT)


class AccessibilityUnavailable(Unavailable, ComputerError):
    """No accessibility bus to read (no session D-Bus, no AT-SPI registry), or it did not answer."""

    def __init__(self, cause: str) -> None:
        super().__init__(
            "Accessibility unavailable: the display's AT-SPI bus is not reachable",
            hint=f"{cause}; the image runs a session D-Bus and at-spi2-core beside the display (AGENTBOX_SESSION_BUS)",
        )


class NodeNotFound(NotFound, ComputerError):
    """A ``node_id`` that names no element (any more): its window closed or its application restarted."""


class WindowNotFound(NotFound, ComputerError):
    """A ``window_id`` that names no top-level window (any more)."""


class ClipboardTooLarge(TooLarge, ComputerError):
    """Clipboard text beyond the cap, either way."""


class ClipboardTimedOut(TimedOut, ComputerError):
    """The clipboard's owner did not hand its text over in time."""


class InvalidComputerAction(Invalid, ComputerError):
    """An action or query rejected before anything reached the display; ``field`` names what."""

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(f"Invalid action: {detail}")
        self.detail = detail
        self.field = field
