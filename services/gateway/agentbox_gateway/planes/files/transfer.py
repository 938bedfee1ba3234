"""Streaming one file out (``GET /v2/fs/download``): the file is opened once, its state at that
moment (inode, size, modification and change times) is its :attr:`Download.version`, and the bytes
are read in chunks in a worker thread.

With the ``abort`` change policy the state is pinned: a download whose caller expected another
version (``expected_version``), or whose file changed before the first byte went out, fails with
:class:`FileChangedMidTransfer`; a change noticed later raises it from :meth:`Download.chunks`, so the door
cuts the transfer instead of sending a mix of two versions. With ``follow`` (the default) the
download sends whatever the kernel reads, as aiod does."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import IO

import anyio.to_thread

from .errors import FileChangedMidTransfer, FileErrorType, FileOperationError

CHANGE_POLICIES = ("follow", "abort")
#: Bytes read per worker-thread hop.
CHUNK = 1024 * 1024


def file_version(info: os.stat_result) -> str:
    """A validator of a file's content: it changes whenever a write, truncate or replace could have."""
    return f"{info.st_ino:x}-{info.st_size:x}-{info.st_mtime_ns:x}-{info.st_ctime_ns:x}"


def file_changed(path: str, detail: str) -> FileChangedMidTransfer:
    return FileChangedMidTransfer(
        operation="download",
        path=path,
        message=f"Failed to download file: {detail} (change_policy=abort)",
        error_type=FileErrorType.FILE_CHANGED,
        exception_type="FileChangedError",
        errno=None,
        retryable=True,
    )


@dataclass
class Download:
    """An open regular file to send; :meth:`close` it once sent (or not sent)."""

    path: str
    #: The resolved path, looked at again to notice the name now naming another file.
    real: str
    name: str
    info: os.stat_result
    handle: IO[bytes]
    abort_on_change: bool

    @property
    def size(self) -> int:
        return self.info.st_size

    @property
    def version(self) -> str:
        return file_version(self.info)

    def check_unchanged(self) -> None:
        """With ``abort``: raise :class:`FileChangedMidTransfer` if the file is no longer the pinned version."""
        if not self.abort_on_change:
            return
        try:
            now: os.stat_result | None = os.stat(self.real)
        except OSError:
            now = None
        current = os.fstat(self.handle.fileno())
        replaced = now is None or (now.st_ino, now.st_dev) != (current.st_ino, current.st_dev)
        if replaced or file_version(current) != self.version:
            raise file_changed(self.path, "the file changed while it was being sent")

    def _read(self, offset: int, length: int) -> bytes:
        data = os.pread(self.handle.fileno(), length, offset)
        self.check_unchanged()
        return data

    async def chunks(self, start: int, end: int) -> AsyncIterator[bytes]:
        """The bytes ``start`` to ``end`` (exclusive). With ``follow`` a file that shrank ends early."""
        offset = start
        while offset < end:
            data = await anyio.to_thread.run_sync(self._read, offset, min(CHUNK, end - offset))
            if not data:
                return
            offset += len(data)
            yield data

    def close(self) -> None:
        self.handle.close()


def check_policy(change_policy: str, path: str) -> None:
    if change_policy not in CHANGE_POLICIES:
        raise FileOperationError.invalid("download", path, f"change_policy must be one of {', '.join(CHANGE_POLICIES)}")
