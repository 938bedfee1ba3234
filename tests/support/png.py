"""Just enough of a PNG decoder for tests (no imaging library in the project): check the chunk
structure and CRCs, inflate the image data, and read pixels of 8-bit RGB/RGBA images."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at bit depth 8


@dataclass(frozen=True)
class Png:
    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, ...]:
        start = x * self.channels
        return tuple(self.rows[y][start : start + self.channels])


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, previous: bytes, bpp: int) -> bytes:
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        up = previous[i]
        up_left = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 2:
            row[i] = (row[i] + up) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            row[i] = (row[i] + _paeth(left, up, up_left)) & 0xFF
    return bytes(row)


def decode_png(data: bytes, rows: int | None = None) -> Png:
    """Decode ``data``; raise AssertionError when it is not a well-formed 8-bit RGB(A) PNG.
    ``rows`` limits how many rows are unfiltered (pixel checks near the top stay fast)."""
    assert data[:8] == SIGNATURE, "not a PNG signature"
    offset, chunks = 8, []
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        chunks.append((kind, body))
        offset += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND", "IHDR/IEND missing"
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert depth == 8 and colour in _CHANNELS and interlace == 0, "unsupported PNG flavour"
    channels = _CHANNELS[colour]
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    stride = 1 + width * channels
    assert len(raw) == height * stride, "image data does not match the header's size"
    decoded, previous = [], bytes(width * channels)
    for y in range(height if rows is None else min(rows, height)):
        line = raw[y * stride : (y + 1) * stride]
        previous = _unfilter(line[0], bytearray(line[1:]), previous, channels)
        decoded.append(previous)
    return Png(width, height, channels, decoded)
