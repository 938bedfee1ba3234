"""A whole directory as one tar stream, both ways (``GET``/``PUT /v2/fs/tree``), in-process with
Python's ``tarfile`` and without a ``tar`` binary, streamed (never the whole archive in memory).

Export walks the directory first (without following links), so a tree over the limits is refused
before a byte is sent, then writes each entry's header (``TarInfo.tobuf``, PAX) and its bytes.

Import is stricter than ``tarfile``'s ``data`` filter: every member is checked before anything of it
is written, into a staging directory next to the destination (``.aiod-tree-<id>.part``), and one bad
member refuses the whole archive, the staging removed and the destination untouched:

- names: absolute, with a ``..`` component, a NUL, or empty are refused (``./`` is dropped);
- types: regular files, directories, symlinks and hard links only (devices, FIFOs, sparse and
  unknown members are refused);
- links: a symlink's target must be relative and stay inside the tree, checked again once the whole
  archive is staged (so a chain of links cannot lead out); a hard link must name an earlier file;
- nothing is written through a link: a member whose parent is a symlink is refused;
- ownership and permissions are not kept: files are created with the umask, executable when the
  member was executable for its owner; no set-id or sticky bits.

Once staged, a destination that did not exist is replaced by the staged tree in one rename
(``rename``); an existing directory gets the entries overlaid one by one (``merge``), descending
only into real directories of the destination, never through its links."""

from __future__ import annotations

import contextlib
import errno as errno_codes
import io
import os
import secrets
import shutil
import stat
import tarfile
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass

import anyio.from_thread
import anyio.to_thread

from .errors import VERBS, FileErrorType, FileOperationError
from .results import TreeImported

#: Bytes handed to the event loop per worker-thread hop on export.
EXPORT_CHUNK = 1024 * 1024
BLOCK = tarfile.BLOCKSIZE


@dataclass(frozen=True)
class TreeLimits:
    """The most a tree transfer may hold: entries, and bytes (tar body in, file content either way)."""

    max_entries: int
    max_bytes: int


def _too_large(operation: str, path: str, detail: str) -> FileOperationError:
    error = FileOperationError.from_errno(errno_codes.EFBIG, operation, path)
    error.message = f"Failed to {VERBS[operation]}: {detail}"
    return error


def _refused(
    path: str, member: str, detail: str, error_type: FileErrorType = FileErrorType.INVALID_PATH
) -> FileOperationError:
    return FileOperationError.invalid("import", path, f"archive member {member!r}: {detail}", error_type)


# -- export ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    real: str
    name: str
    info: os.stat_result


def _entries(real: str, path: str, limits: TreeLimits) -> list[_Entry]:
    """Every entry under ``real`` (directories before their contents, names sorted), links not
    followed; FIFOs, sockets and devices are left out (a tar of them is no use to a client)."""
    if not stat.S_ISDIR(os.stat(real).st_mode):
        raise FileOperationError.from_errno(errno_codes.ENOTDIR, "export", path)
    found: list[_Entry] = []
    total = 0
    stack = [(real, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as iterator:
            children = list(iterator)
        for child in children:
            info = child.stat(follow_symlinks=False)
            mode = info.st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                continue
            name = prefix + child.name
            found.append(_Entry(child.path, name, info))
            if len(found) > limits.max_entries:
                raise _too_large("export", path, f"more than {limits.max_entries} entries")
            if stat.S_ISREG(mode):
                total += info.st_size
                if total > limits.max_bytes:
                    raise _too_large("export", path, f"more than {limits.max_bytes} bytes")
        stack.extend((c.path, prefix + c.name + "/") for c in children if c.is_dir(follow_symlinks=False))
    # name order, every directory right before its contents
    found.sort(key=lambda e: e.name.split("/"))
    return found


def _header(entry: _Entry) -> bytes:
    info = entry.info
    member = tarfile.TarInfo(entry.name)
    member.mode = stat.S_IMODE(info.st_mode)
    member.mtime = int(info.st_mtime)
    member.uid, member.gid = info.st_uid, info.st_gid
    if stat.S_ISDIR(info.st_mode):
        member.type = tarfile.DIRTYPE
    elif stat.S_ISLNK(info.st_mode):
        member.type = tarfile.SYMTYPE
        member.linkname = os.readlink(entry.real)
    else:
        member.size = info.st_size
    return member.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def _tar_stream(entries: list[_Entry], path: str) -> Generator[bytes]:
    """The archive in pieces of about :data:`EXPORT_CHUNK` bytes."""
    buffer = bytearray()
    for entry in entries:
        buffer += _header(entry)
        if stat.S_ISREG(entry.info.st_mode) and entry.info.st_size:
            with open(entry.real, "rb", buffering=0) as handle:
                left = entry.info.st_size
                while left:
                    data = handle.read(min(EXPORT_CHUNK, left))
                    if not data:
                        raise FileOperationError.invalid(
                            "export", path, f"{entry.name} shrank while it was being sent", FileErrorType.IO_ERROR
                        )
                    buffer += data
                    left -= len(data)
                    if len(buffer) >= EXPORT_CHUNK:
                        yield bytes(buffer)
                        buffer.clear()
            buffer += bytes(-entry.info.st_size % BLOCK)
        if len(buffer) >= EXPORT_CHUNK:
            yield bytes(buffer)
            buffer.clear()
    buffer += bytes(2 * BLOCK)  # the end-of-archive marker
    yield bytes(buffer)


@dataclass
class TreeExport:
    """A directory ready to stream as tar: the walk is done, the limits checked."""

    path: str
    name: str
    entries: int
    size: int
    _pieces: Generator[bytes]

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            piece = await anyio.to_thread.run_sync(next, self._pieces, None)
            if piece is None:
                return
            yield piece

    def close(self) -> None:
        """Release the file being read, if the stream stopped half-way."""
        self._pieces.close()


def export_tree(real: str, path: str, limits: TreeLimits) -> TreeExport:
    entries = _entries(real, path, limits)
    size = sum(e.info.st_size for e in entries if stat.S_ISREG(e.info.st_mode))
    name = os.path.basename(real.rstrip("/")) or "root"
    return TreeExport(path, name, len(entries), size, _tar_stream(entries, path))


# -- import ------------------------------------------------------------------------------------


class _BodyReader(io.RawIOBase):
    """The request body as a blocking file for ``tarfile`` in a worker thread: each refill waits on
    the event loop for the next chunk, so the body is never held whole. Counts what it read."""

    def __init__(self, next_chunk: Callable[[], bytes | None], limit: int, path: str) -> None:
        self._next = next_chunk
        self._buffer = memoryview(b"")
        self._limit = limit
        self._path = path
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, target: memoryview) -> int:  # type: ignore[override]
        while not self._buffer:
            chunk = self._next()
            if chunk is None:
                return 0
            self.received += len(chunk)
            if self.received > self._limit:
                raise _too_large("import", self._path, f"the tar body is larger than {self._limit} bytes")
            self._buffer = memoryview(chunk)
        count = min(len(target), len(self._buffer))
        target[:count] = self._buffer[:count]
        self._buffer = self._buffer[count:]
        return count


def _member_name(member: tarfile.TarInfo, path: str) -> str | None:
    """The member's checked relative name, or None for the archive's root (``.``, ``./``)."""
    name = member.name
    if "\x00" in name:
        raise _refused(path, name, "the name contains a NUL byte")
    if name.startswith("/") or os.path.isabs(name):
        raise _refused(path, name, "absolute names are not allowed")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refused(path, name, "'..' is not allowed in a name")
    return "/".join(parts) or None


def _link_inside(name: str, target: str) -> bool:
    """Whether a symlink at ``name`` pointing at ``target`` stays lexically inside the tree."""
    if os.path.isabs(target):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(name), target))
    return resolved != ".." and not resolved.startswith("../") and not os.path.isabs(resolved)


class _Stager:
    """Extracts checked members into the staging directory, never through a link."""

    def __init__(self, staging: str, path: str, limits: TreeLimits) -> None:
        self.staging = staging
        self.path = path
        self.limits = limits
        self.entries = 0
        self.bytes_written = 0
        self.files: set[str] = set()
        self.symlinks: list[str] = []

    def _parent_ready(self, name: str) -> str:
        """The staged path for ``name``, its parents created as real directories (refusing a link)."""
        parts = name.split("/")
        current = self.staging
        for part in parts[:-1]:
            current = os.path.join(current, part)
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                os.mkdir(current)
                continue
            if not stat.S_ISDIR(mode):
                raise _refused(self.path, name, "a parent of this member is not a directory in the archive")
        target = os.path.join(current, parts[-1])
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(target).st_mode):
                return target
            os.unlink(target)  # a later member of the same name wins, as with tar
            self.files.discard(name)
        return target

    def add(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        name = _member_name(member, self.path)
        if name is None:
            if not member.isdir():
                raise _refused(self.path, member.name, "the archive's root must be a directory")
            return
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise _too_large("import", self.path, f"more than {self.limits.max_entries} entries")
        if member.issparse() or not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
            raise _refused(
                self.path, member.name, "only files, directories and links are allowed", FileErrorType.INVALID_TARGET
            )
        target = self._parent_ready(name)
        if member.isdir():
            if not os.path.lexists(target):
                os.mkdir(target)
        elif member.issym():
            if not _link_inside(name, member.linkname):
                raise _refused(self.path, member.name, f"the link to {member.linkname!r} points outside the tree")
            if os.path.lexists(target):
                raise _refused(self.path, member.name, "a directory of this name is already in the archive")
            os.symlink(member.linkname, target)
            self.symlinks.append(target)
        elif member.islnk():
            source = _member_name(tarfile.TarInfo(member.linkname), self.path)
            if source is None or source not in self.files:
                raise _refused(self.path, member.name, f"the hard link to {member.linkname!r} names no earlier file")
            os.link(os.path.join(self.staging, source), target, follow_symlinks=False)
            self.files.add(name)
        else:
            self._write_file(archive, member, name, target)

    def _write_file(self, archive: tarfile.TarFile, member: tarfile.TarInfo, name: str, target: str) -> None:
        self.bytes_written += member.size
        if self.bytes_written > self.limits.max_bytes:
            raise _too_large("import", self.path, f"more than {self.limits.max_bytes} bytes of files")
        if os.path.isdir(target):
            raise _refused(self.path, member.name, "a directory of this name is already in the archive")
        mode = 0o777 if member.mode & 0o100 else 0o666
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(descriptor, "wb") as handle:
            source = archive.extractfile(member)
            if source is not None:
                shutil.copyfileobj(source, handle, EXPORT_CHUNK)
        self.files.add(name)

    def verify_links(self) -> None:
        """Every staged symlink, resolved with the whole tree in place, still lands inside it."""
        root = os.path.realpath(self.staging)
        for link in self.symlinks:
            resolved = os.path.realpath(link)
            if resolved != root and not resolved.startswith(root + "/"):
                name = os.path.relpath(link, self.staging)
                raise _refused(self.path, name, f"the link to {os.readlink(link)!r} leads outside the tree")


def _merge(staged: str, destination: str, path: str) -> None:
    """Overlay the staged tree on an existing directory: real directories are merged into, anything
    else is replaced (a link in the destination is replaced, never followed)."""
    with os.scandir(staged) as iterator:
        children = list(iterator)
    for child in children:
        target = os.path.join(destination, child.name)
        try:
            existing = os.lstat(target).st_mode
        except FileNotFoundError:
            os.rename(child.path, target)
            continue
        if child.is_dir(follow_symlinks=False):
            if stat.S_ISDIR(existing):
                _merge(child.path, target, path)
                continue
            os.unlink(target)
            os.rename(child.path, target)
        elif stat.S_ISDIR(existing):
            relative = os.path.relpath(target, destination)
            raise FileOperationError.invalid(
                "import",
                path,
                f"{relative} is a directory and the archive has a file there",
                FileErrorType.ALREADY_EXISTS,
            )
        else:
            os.replace(child.path, target)


def import_tree(
    real: str, path: str, next_chunk: Callable[[], bytes | None], limits: TreeLimits, declared: int | None
) -> TreeImported:
    """Extract the tar stream ``next_chunk`` yields into ``real``; blocks (a worker thread). A body
    ``declared`` (its length known) over the limit is refused before anything is read or made."""
    if declared is not None and declared > limits.max_bytes:
        raise _too_large("import", path, f"the tar body is larger than {limits.max_bytes} bytes")
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISDIR(os.lstat(real).st_mode):
            raise FileOperationError.from_errno(errno_codes.ENOTDIR, "import", path)
    parent = os.path.dirname(real.rstrip("/")) or "/"
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(parent, f".aiod-tree-{secrets.token_hex(8)}.part")
    os.mkdir(staging)
    try:
        reader = _BodyReader(next_chunk, limits.max_bytes, path)
        stager = _Stager(staging, path, limits)
        try:
            with tarfile.open(fileobj=io.BufferedReader(reader, EXPORT_CHUNK), mode="r|*") as archive:
                for member in archive:
                    stager.add(archive, member)
        except (tarfile.TarError, EOFError) as exc:
            raise FileOperationError.invalid("import", path, f"not a readable tar stream: {exc}") from None
        stager.verify_links()
        if os.path.lexists(real):
            _merge(staging, real, path)
            mode = "merge"
        else:
            os.rename(staging, real)
            mode = "rename"
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)
    return TreeImported(path, mode, stager.entries, stager.bytes_written)


def chunk_pump(chunks: AsyncIterator[bytes]) -> Callable[[], bytes | None]:
    """A blocking ``next`` over an async iterator of body chunks, for the worker thread."""

    async def pull() -> bytes | None:
        while True:
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                return None
            if chunk:
                return chunk

    return lambda: anyio.from_thread.run(pull)
