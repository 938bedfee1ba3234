"""The display's clipboard (the X ``CLIPBOARD`` selection) through Debian's ``xclip``: X hands a
selection over between clients, so the text is read from whichever program owns it and set by an
``xclip`` that stays to serve it (as a person's copy does) until another client takes the clipboard."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time

from .actions import MAX_CLIPBOARD_BYTES
from .errors import ClipboardTimedOut, ClipboardTooLarge, ComputerError

#: Seconds a clipboard owner gets to hand its text over (AIO's read timeout).
READ_TIMEOUT = 5.0
#: Seconds for ``xclip -i`` to take the clipboard before it forks to serve it.
SET_TIMEOUT = 5.0


def _xclip() -> str:
    path = shutil.which("xclip")
    if path is None:
        raise ComputerError("xclip is not installed: the clipboard needs it (Debian: xclip)")
    return path


class Clipboard:
    def __init__(self, display: str) -> None:
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DISPLAY": display}

    @staticmethod
    async def _end(process: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()

    async def get(self) -> str:
        """The clipboard's text ("" when it is empty or holds no text)."""
        process = await asyncio.create_subprocess_exec(
            _xclip(),
            "-selection",
            "clipboard",
            "-o",
            "-target",
            "UTF8_STRING",
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None and process.stderr is not None
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                data = await process.stdout.read(MAX_CLIPBOARD_BYTES + 1)
                if len(data) > MAX_CLIPBOARD_BYTES:
                    raise ClipboardTooLarge(f"the clipboard holds more than {MAX_CLIPBOARD_BYTES} bytes of text")
                error = await process.stderr.read()
                code = await process.wait()
        except TimeoutError as exc:
            raise ClipboardTimedOut(f"the clipboard's owner did not hand its text over in {READ_TIMEOUT:g} s") from exc
        finally:
            if process.returncode is None:
                await self._end(process)
        if code != 0:
            message = error.decode(errors="replace").strip()
            if "target" in message.lower() or "no selection" in message.lower() or not message:
                return ""  # empty, or holds something that is not text
            raise ComputerError(f"reading the clipboard failed: {message}")
        return data.decode(errors="replace")

    async def set(self, text: str) -> None:
        """Own the clipboard with ``text``; xclip serves it from the background until replaced."""
        data = text.encode()
        if len(data) > MAX_CLIPBOARD_BYTES:
            raise ClipboardTooLarge(f"clipboard text is larger than {MAX_CLIPBOARD_BYTES} bytes")
        process = await asyncio.create_subprocess_exec(
            _xclip(),
            "-selection",
            "clipboard",
            "-i",
            "-silent",
            env=self.env,
            stdin=asyncio.subprocess.PIPE,
            # The fork that stays to serve the text would hold any pipe open: none is given it.
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(SET_TIMEOUT):
                await process.communicate(data)
        except TimeoutError as exc:
            await self._end(process)
            raise ComputerError(f"setting the clipboard did not finish in {SET_TIMEOUT:g} s") from exc
        if process.returncode != 0:
            raise ComputerError(f"setting the clipboard failed: xclip exited with {process.returncode}")
        # xclip's fork takes the clipboard after its parent exits: until it has, a read gets the old text.
        deadline = time.monotonic() + SET_TIMEOUT
        while await self.get() != text:
            if time.monotonic() > deadline:
                raise ComputerError(f"the clipboard did not take the text in {SET_TIMEOUT:g} s")
            await asyncio.sleep(0.01)
