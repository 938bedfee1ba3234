"""A terminal's retained output: the last ``limit`` bytes it printed, addressed by absolute offset
(byte ``n`` of everything the terminal ever printed), so a reader that went away can say where it
stopped and get exactly what came after, or learn how much of it is gone."""

from __future__ import annotations

import asyncio


def utf8_cut(data: bytes | bytearray) -> int:
    """The length of ``data`` without a trailing incomplete UTF-8 sequence (its lead byte and the
    continuation bytes seen so far), so text decoded chunk by chunk never splits a character."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        needed = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
        return len(data) - back if needed > back else len(data)
    return len(data)


class OutputHistory:
    """Bytes appended at the end, the oldest dropped past ``limit``; readers wait for growth."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        #: The absolute offset of the oldest byte still held.
        self.start = 0
        self.closed = False
        self._grown = asyncio.Event()

    @property
    def end(self) -> int:
        """The absolute offset just past the newest byte: everything the terminal printed so far."""
        return self.start + len(self._data)

    def append(self, data: bytes) -> None:
        self._data += data
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]
            self.start += excess
        self._wake()

    def close(self) -> None:
        """No more output will come: waiting readers return."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        grown, self._grown = self._grown, asyncio.Event()
        grown.set()

    def since(self, offset: int, most: int) -> tuple[int, bytes]:
        """``(first, data)``: up to ``most`` bytes from ``offset`` on; ``first`` is later than
        ``offset`` when the bytes between were dropped."""
        first = max(offset, self.start)
        index = first - self.start
        return first, bytes(self._data[index : index + most])

    def between(self, first: int, end: int) -> bytes:
        """The bytes from ``first`` to ``end`` still held (a part dropped is left out)."""
        first = max(first, self.start)
        return bytes(self._data[first - self.start : max(end - self.start, 0)])

    def tail(self, most: int) -> bytes:
        return bytes(self._data[-most:]) if most > 0 else b""

    async def wait_beyond(self, offset: int) -> None:
        """Return once there are bytes past ``offset`` (or the output has ended)."""
        while self.end <= offset and not self.closed:
            await self._grown.wait()
