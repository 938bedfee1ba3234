"""The file plane: the eight ``sandbox_file_operations`` actions (read, write, replace, search, find,
list, grep, glob), uploads and downloads, each returning a record of :mod:`.results` and failing
with one error (:mod:`.errors`).

Every operation runs its blocking file I/O in one worker thread (``anyio.to_thread``) so a slow disk
or a big tree never stalls the event loop, except a ``read`` of a regular file of at most
:data:`INLINE_READ_LIMIT` bytes: for it the thread hop costs more than the read. The tree-walking
actions live in :mod:`.tree`."""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno as errno_codes
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import IO, TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from ...settings import GatewaySettings
from .errors import VERBS, FileErrorType, FileOperationError, compile_pattern, guarded, resolve_path
from .manage import copy_path, delete_path, make_directory, move_path, stat_path
from .queries import GlobQuery, GrepQuery, ListQuery
from .results import (
    DirectoryListing,
    DownloadTarget,
    FileRead,
    FileReplaced,
    FileSearch,
    FileWritten,
    FoundFiles,
    GlobResult,
    GrepResult,
    PathChanged,
    PathInfo,
    SavedUpload,
    TreeImported,
)
from .transfer import Download, check_policy, file_changed
from .tree import (
    find_files,
    glob_files,
    grep_files,
    list_directory,
    open_nonblocking,
    read_up_to,
    split_lines,
)

if TYPE_CHECKING:  # tar archives are loaded by the first tree call (tests/gateway/test_lazy_start.py)
    from .tar_tree import TreeExport, TreeLimits

#: aiod's limit for a file read into a tool answer (download streams instead).
READ_LIMIT = 16 * 1024 * 1024
ENCODINGS = ("utf-8", "base64", "raw")
#: Regular files up to this size are read on the event loop (a ``stat`` says so first): the worker
#: thread hop (some 0.1 ms under load) costs more than reading them. A file that grows between that
#: ``stat`` and the read is still read whole, within :data:`READ_LIMIT`.
INLINE_READ_LIMIT = 64 * 1024

T = TypeVar("T")


def _require_regular(info: os.stat_result, operation: str, path: str) -> None:
    """Refuse directories and everything that is not a regular file: FIFOs, devices and sockets
    block or never end, so the plane never reads or writes them."""
    if stat.S_ISDIR(info.st_mode):
        raise FileOperationError.from_errno(errno_codes.EISDIR, operation, path)
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(operation, path)


def _not_regular(operation: str, path: str) -> FileOperationError:
    return FileOperationError.invalid(operation, path, "not a regular file", FileErrorType.INVALID_TARGET)


def _small_regular_file(path: str) -> bool:
    """Whether ``path`` is a regular file small enough to read without leaving the event loop
    (anything else, missing files included, goes to the worker thread and fails there)."""
    try:
        info = os.stat(os.path.expanduser(path))
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= INLINE_READ_LIMIT


def _read_bytes(real: str, operation: str, path: str, limit: int = READ_LIMIT) -> bytes:
    """A regular file's bytes, refusing FIFOs/devices (they block or never end) and files over ``limit``."""
    with open_nonblocking(real) as handle:
        info = os.fstat(handle.fileno())
        _require_regular(info, operation, path)
        if info.st_size > limit:
            raise _too_large(operation, path, limit)
        data = read_up_to(handle, info.st_size, limit)
    if len(data) > limit:
        raise _too_large(operation, path, limit)
    return data


def _too_large(operation: str, path: str, limit: int) -> FileOperationError:
    error = FileOperationError.from_errno(errno_codes.EFBIG, operation, path)
    error.message = (
        f"Failed to {VERBS[operation]}: file exceeds the {limit / 1024**2:g} MiB buffered text limit "
        f"({limit} bytes); download it instead (GET /v1/file/download, GET /v2/fs/download)"
    )
    return error


def read_text_sync(real: str, operation: str, path: str) -> str:
    return _read_bytes(real, operation, path).decode("utf-8")


def write_bytes_sync(real: str, data: bytes, operation: str, path: str, append: bool = False) -> None:
    """Write (or append) ``data`` to a regular file, creating it and missing parent directories as
    aiod does. The file is opened without waiting (a FIFO must not hold the call) and checked on the
    opened descriptor before anything is truncated or written."""
    parent = os.path.dirname(real)
    if parent and not os.path.lexists(parent):
        os.makedirs(parent, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        _require_regular(os.stat(real), operation, path)  # never even open a device
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    try:
        descriptor = os.open(real, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno_codes.ENXIO:  # a FIFO nobody reads, or a socket
            raise _not_regular(operation, path) from None
        raise
    with os.fdopen(descriptor, "wb") as handle:
        _require_regular(os.fstat(descriptor), operation, path)
        if not append:
            handle.truncate(0)
        handle.write(data)


def _split_byte_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
        return [line + b"\n" for line in lines]
    return [line + b"\n" for line in lines[:-1]] + [lines[-1]]


def _read(real: str, path: str, encoding: str, start_line: int | None, end_line: int | None) -> FileRead:
    data = _read_bytes(real, "read", path)
    sliced = start_line is not None or end_line is not None
    if encoding == "base64":
        if sliced:
            data = b"".join(_split_byte_lines(data)[start_line:end_line])
        content = base64.b64encode(data).decode("ascii")
    else:
        text = data.decode("utf-8", errors="strict" if encoding == "utf-8" else "replace")
        content = "".join(split_lines(text)[start_line:end_line]) if sliced else text
    return FileRead(path, content)


def _write(
    real: str,
    path: str,
    content: str,
    encoding: str,
    append: bool,
    leading_newline: bool,
    trailing_newline: bool,
) -> FileWritten:
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise FileOperationError.invalid("write", path, "content is not valid base64") from None
    elif encoding == "raw":  # aiod: each character is one byte
        try:
            data = content.encode("latin-1")
        except UnicodeEncodeError:
            raise FileOperationError.invalid(
                "write", path, "raw content holds a character above U+00FF (one character is one byte)"
            ) from None
    else:
        text = ("\n" if leading_newline else "") + content + ("\n" if trailing_newline else "")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise FileOperationError.invalid("write", path, "content is not valid Unicode text") from None
    write_bytes_sync(real, data, "write", path, append)
    return FileWritten(path, len(data))


def _replace(real: str, path: str, old: str, new: str) -> FileReplaced:
    text = read_text_sync(real, "replace", path)
    count = text.count(old)
    if count:
        write_bytes_sync(real, text.replace(old, new).encode("utf-8"), "replace", path)
    return FileReplaced(path, count)


def _search(real: str, path: str, regex: str) -> FileSearch:
    pattern = compile_pattern(regex, "search", path)
    matches: list[str] = []
    numbers: list[int] = []
    for number, line in enumerate(split_lines(read_text_sync(real, "search", path)), start=1):
        line = line.rstrip("\n")
        if pattern.search(line):
            matches.append(line)
            numbers.append(number)
    return FileSearch(path, tuple(matches), tuple(numbers))


def _save_upload(real: str, path: str, source: IO[bytes], filename: str | None) -> SavedUpload:
    if path.endswith("/"):  # "dir/": a directory, created when missing
        os.makedirs(real, exist_ok=True)
    if os.path.isdir(real):  # a directory target keeps the uploaded file's own name
        name = os.path.basename((filename or "").replace("\\", "/"))
        if name in ("", ".", ".."):
            raise FileOperationError.invalid("upload", path, "the uploaded file has no name; give a file path")
        real, path = os.path.join(real, name), os.path.join(path, name)
    with contextlib.suppress(FileNotFoundError):
        _require_regular(os.stat(real), "upload", path)  # a FIFO or device is not replaced
    parent = os.path.dirname(real) or "/"
    if not os.path.lexists(parent):
        os.makedirs(parent, exist_ok=True)
    source.seek(0)
    # Write next to the target and rename, so a reader never sees half an upload. os.open applies the
    # umask, so a new file gets the same mode a plain write would give it.
    temporary = os.path.join(parent, f".upload-{secrets.token_hex(8)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            shutil.copyfileobj(source, handle, 1024 * 1024)
        if os.path.lexists(real):
            shutil.copymode(real, temporary)
        os.replace(temporary, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return SavedUpload(path, os.stat(real).st_size)


def _download_target(real: str, path: str) -> DownloadTarget:
    """Checked by name first (a device is never opened), then opened (the permission check now, not
    half-way through the response) and checked again on what was opened, which is what is sent."""
    _require_regular(os.stat(real), "download", path)
    handle = open_nonblocking(real)
    try:
        info = os.fstat(handle.fileno())
        _require_regular(info, "download", path)
    except BaseException:
        handle.close()
        raise
    return DownloadTarget(f"/proc/self/fd/{handle.fileno()}", os.path.basename(real), info, handle)


def _open_download(real: str, path: str, change_policy: str, expected_version: str | None) -> Download:
    """As :func:`_download_target`, keeping the state at open as the download's version."""
    _require_regular(os.stat(real), "download", path)
    handle = open_nonblocking(real)  # a FIFO swapped in after the check must not hold the call
    try:
        info = os.fstat(handle.fileno())
        _require_regular(info, "download", path)
        download = Download(path, real, os.path.basename(real), info, handle, change_policy == "abort")
        if download.abort_on_change and expected_version not in (None, download.version):
            raise file_changed(path, "the file is no longer the version asked for")
    except BaseException:
        handle.close()
        raise
    return download


class FilePlane:
    """The sandbox's file system as seen by agents; stateless apart from settings."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings

    async def aclose(self) -> None:
        """Nothing to release: every operation opens and closes its own files."""

    async def _run(self, operation: str, path: str, fn: Callable[..., T], *args: Any, inline: bool = False) -> T:
        """``fn(real_path, path, *args)`` in the worker thread, or here when ``inline`` (the caller
        checked that the work is a small file's)."""

        def job() -> T:
            real = resolve_path(path, operation)
            return guarded(operation, path, lambda: fn(real, path, *args))

        return job() if inline else await anyio.to_thread.run_sync(job)

    @staticmethod
    def _check_encoding(operation: str, path: str, encoding: str | None) -> str:
        encoding = (encoding or "utf-8").lower()
        if encoding == "utf8":
            encoding = "utf-8"
        if encoding not in ENCODINGS:
            raise FileOperationError.invalid(operation, path, f"encoding must be one of {', '.join(ENCODINGS)}")
        return encoding

    async def read(
        self,
        path: str,
        *,
        encoding: str | None = "utf-8",
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> FileRead:
        """``content`` of a file; ``start_line``/``end_line`` are 0-based, end exclusive."""
        encoding = self._check_encoding("read", path, encoding)
        for name, value in (("start_line", start_line), ("end_line", end_line)):
            if value is not None and value < 0:
                raise FileOperationError.invalid("read", path, f"{name} must be 0 or more")
        inline = _small_regular_file(path)
        return await self._run("read", path, _read, encoding, start_line, end_line, inline=inline)

    async def write(
        self,
        path: str,
        content: str | None,
        *,
        encoding: str | None = "utf-8",
        append: bool = False,
        leading_newline: bool = False,
        trailing_newline: bool = False,
    ) -> FileWritten:
        if content is None:
            raise FileOperationError.invalid("write", path, "content is required for write")
        encoding = self._check_encoding("write", path, encoding)
        return await self._run("write", path, _write, content, encoding, append, leading_newline, trailing_newline)

    async def replace(self, path: str, old: str | None, new: str | None) -> FileReplaced:
        """Replace every occurrence of ``old`` (``content``) with ``new`` (``target``)."""
        if not old:
            raise FileOperationError.invalid("replace", path, "content (the text to replace) is required")
        if new is None:
            raise FileOperationError.invalid("replace", path, "target (the replacement text) is required")
        return await self._run("replace", path, _replace, old, new)

    async def search(self, path: str, regex: str | None) -> FileSearch:
        """Lines of one file matching ``regex`` with their 1-based numbers."""
        if not regex:
            raise FileOperationError.invalid("search", path, "content (the regex to search for) is required")
        return await self._run("search", path, _search, regex)

    async def find(self, path: str, pattern: str | None) -> FoundFiles:
        """Files under ``path`` whose name matches the glob ``pattern`` (like ``find -name``)."""
        if not pattern:
            raise FileOperationError.invalid("find", path, "pattern (a file-name glob) is required")
        return await self._run("find", path, find_files, pattern)

    async def list(self, path: str, query: ListQuery | None = None) -> DirectoryListing:
        """The entries of a directory (and below, with ``recursive``), at most 10000."""
        return await self._run("list", path, list_directory, query or ListQuery())

    async def grep(self, path: str, query: GrepQuery) -> GrepResult:
        """Regex (or literal) search across files, ripgrep-style: hidden and binary files and files
        over 1 MiB are skipped; at most 500 matches."""
        if not query.pattern:
            raise FileOperationError.invalid("grep", path, "pattern is required")
        return await self._run("grep", path, grep_files, query)

    async def glob(self, path: str, query: GlobQuery) -> GlobResult:
        """Paths under ``path`` matching a path glob such as ``**/*.py`` (at most 5000)."""
        if not query.pattern:
            raise FileOperationError.invalid("glob", path, "pattern (a glob such as **/*.py) is required")
        return await self._run("glob", path, glob_files, query)

    async def read_text(self, path: str) -> str:
        """A whole UTF-8 file (for the editor)."""
        return await self._run("read", path, lambda real, given: read_text_sync(real, "read", given))

    async def write_text(self, path: str, text: str) -> None:
        """Replace a file's content with ``text`` (for the editor)."""
        await self._run("write", path, lambda real, given: write_bytes_sync(real, text.encode("utf-8"), "write", given))

    async def save_upload(self, path: str | None, filename: str | None, source: IO[bytes]) -> SavedUpload:
        """Copy an uploaded (spooled) file to ``path`` atomically. A directory ``path`` (or none: the
        temp directory) keeps the upload's own file name."""
        return await self._run("upload", path or tempfile.gettempdir(), _save_upload, source, filename)

    async def download_target(self, path: str) -> DownloadTarget:
        """A readable regular file, open, for a streamed response (the caller closes it)."""
        return await self._run("download", path, _download_target)

    async def stat(self, path: str, *, follow_symlinks: bool = True) -> PathInfo:
        return await self._run("stat", path, stat_path, follow_symlinks)

    async def mkdir(self, path: str, *, parents: bool = False) -> PathChanged:
        """Create a directory; ``parents`` creates the missing ones above and accepts an existing one."""
        return await self._run("mkdir", path, make_directory, parents)

    async def copy(self, source: str, destination: str, *, overwrite: bool = False) -> PathChanged:
        """Copy a file or a whole tree (links stay links); an existing destination needs ``overwrite``."""
        target = resolve_path(destination, "copy")
        return await self._run("copy", source, copy_path, target, overwrite)

    async def move(self, source: str, destination: str, *, overwrite: bool = False) -> PathChanged:
        """Move or rename; an existing destination needs ``overwrite``."""
        target = resolve_path(destination, "move")
        return await self._run("move", source, move_path, target, overwrite)

    async def delete(self, path: str, *, recursive: bool = False) -> PathChanged:
        """Remove a file or link (never what it points at), or a directory: a non-empty one needs
        ``recursive``."""
        return await self._run("delete", path, delete_path, recursive)

    async def open_download(
        self, path: str, *, change_policy: str = "follow", expected_version: str | None = None
    ) -> Download:
        """An open regular file to stream (the caller closes it). With ``change_policy="abort"`` the
        state at open is pinned: ``expected_version`` must match it, and a change cuts the stream."""
        check_policy(change_policy, path)
        return await self._run("download", path, _open_download, change_policy, expected_version)

    def _tree_limits(self) -> TreeLimits:
        from .tar_tree import TreeLimits

        return TreeLimits(self.settings.fs_tree_max_entries, self.settings.fs_tree_max_bytes)

    async def export_tree(self, path: str) -> TreeExport:
        """A directory as a tar stream, walked and checked against the limits before any byte."""
        from .tar_tree import export_tree

        return await self._run("export", path, export_tree, self._tree_limits())

    async def import_tree(self, path: str, chunks: AsyncIterator[bytes], *, size: int | None = None) -> TreeImported:
        """Extract a tar stream into ``path`` (see :mod:`.tar_tree` for what is refused); ``size``:
        the stream's length, when known, so a stream over the limit is refused at once."""
        from .tar_tree import chunk_pump, import_tree

        limits = self._tree_limits()
        return await self._run("import", path, import_tree, chunk_pump(chunks), limits, size)
