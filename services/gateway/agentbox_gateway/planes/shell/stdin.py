"""The stdin of an ``interactive`` command: a FIFO the shell opens by name and the gateway writes.

A long-lived shell cannot be handed a new descriptor, so the pipe needs a name. ``/proc/<gateway>/fd/N``
is not one a shell may open: the gateway is non-dumpable (it hides its key), which makes its ``/proc``
entries unreadable to its own non-root children. A FIFO is: it is created ``0600`` under a random
name in the temporary directory, held open for reading by the gateway until the command ends (so
input written before the shell opens it is kept), and removed when the command ends."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import tempfile

#: How often the end-of-input task looks whether the command has opened the FIFO yet.
_POLL = 0.01


class CommandInput:
    """One command's stdin. ``write`` never blocks; ``end`` is the EOF (Ctrl-D)."""

    def __init__(self) -> None:
        while True:
            path = os.path.join(tempfile.gettempdir(), f".agentbox-stdin-{secrets.token_hex(8)}")
            try:
                os.mkfifo(path, 0o600)
                break
            except FileExistsError:
                continue
        self.path = path
        self._keep: int | None = None
        self._writer: int | None = None
        flags = os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            self._keep = os.open(path, os.O_RDONLY | flags)
            self._writer = os.open(path, os.O_WRONLY | flags)
        except BaseException:
            self.close()
            raise

    @property
    def open(self) -> bool:
        """Whether the command can still be sent input (no EOF yet)."""
        return self._writer is not None and self._keep is not None

    def write(self, data: bytes) -> int:
        """``os.write`` on the FIFO; ``BlockingIOError`` when the command does not read its input."""
        if not self.open:
            raise BrokenPipeError("the command's stdin is closed")
        assert self._writer is not None
        return os.write(self._writer, data)

    async def end(self, finished: asyncio.Event) -> None:
        """Send EOF. The write end is closed only once the command holds the FIFO open: before that,
        closing it would leave the shell's ``open`` waiting for a writer forever (until ``finished``)."""
        _close(self._keep)
        self._keep = None
        while self._writer is not None and not finished.is_set():
            if self._has_reader():
                break
            await asyncio.sleep(_POLL)
        _close(self._writer)
        self._writer = None

    def _has_reader(self) -> bool:
        """Whether someone else has the FIFO open for reading (a non-blocking write-open fails with
        ``ENXIO`` otherwise); only meaningful once our own read end is closed."""
        try:
            probe = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return False
        os.close(probe)
        return True

    def close(self) -> None:
        """Close both ends and remove the FIFO (the command ended)."""
        for fd in (self._keep, self._writer):
            _close(fd)
        self._keep = self._writer = None
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
