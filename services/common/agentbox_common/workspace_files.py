"""Workspace files opened race-free: the one place MCP mode's file tools, API mode's ``/mcp/`` and
``/files`` touch the workspace's files.

A path is walked from a directory fd of ``AICODEBOX_WORKSPACE``, one component at a time with
``O_NOFOLLOW``, and the operation works on the fds it ends with — never on a path string that
could be re-resolved. A symlink met on the way is read (``readlinkat``) and expanded by the walk
itself: a relative target continues from the directory holding the link, an absolute one must lie
under the root, and ``..`` can never climb above the root. So swapping a directory for a symlink
between a check and an open cannot lead outside: there is no separate check. Semantics are those
aicodebox documents: a leading ``/`` is relative to the root; symlinks that stay inside work; an
escaping path is refused with ``path escapes workspace root: <path>`` and touches nothing.

Only regular files are read or written: special files (a FIFO, a device) are refused from the
walk's ``lstat`` and again from ``fstat`` of the fd actually opened (with ``O_NONBLOCK``, so a FIFO
cannot block the worker). ``delete`` removes a symlink itself, never its target. Uploads go to a
temporary file beside the target, renamed over it when complete.

sandboxd's filesystem door uses the same walk for its root (:meth:`WorkspaceFiles.describe`,
:meth:`~WorkspaceFiles.scan`, :meth:`~WorkspaceFiles.remove`, :meth:`~WorkspaceFiles.real_dir`), with
one difference in how a path is read: an absolute path naming the root itself is taken relative to
it (:func:`under_root`), as sandboxd's spec says.

Every failure is a :class:`FileProblem` (a :class:`~agentbox_common.errors.PlaneError`) naming the
path; its subclass says what went wrong (not found, changed meanwhile, too large, access denied, disk
full) and each door answers it in its own terms.
The functions block: call them from a worker thread.
"""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agentbox_common.errors import Conflict, Denied, Invalid, LimitReached, NotFound, TooLarge

#: Largest file ``read_bytes`` returns (the gateway's read limit too).
READ_LIMIT = 16 * 1024 * 1024
#: Symlinks one walk may expand (the kernel's own bound).
MAX_SYMLINKS = 40
#: Times one walk looks again at a component replaced under it before giving up.
MAX_CHANGES = 8

_PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

T = TypeVar("T")


class FileProblem(Invalid):
    """A file operation refused (a bad or escaping path, a directory or special file); the message
    names the path. The subclasses say what else went wrong."""


class PathEscapes(FileProblem):
    """The path leads outside the root (``..``, an absolute or relative symlink out)."""


class WorkspaceFileNotFound(NotFound, FileProblem): ...


class FileChanged(Conflict, FileProblem):
    """The file or a directory on its path changed during the operation; retrying may work."""


class WorkspaceFileTooLarge(TooLarge, FileProblem): ...


class FileAccessDenied(Denied, FileProblem):
    """The file system refuses access (permissions)."""


class DirectoryNotEmpty(Conflict, FileProblem):
    """A directory to remove still holds entries, and the removal was not recursive."""


class DiskFull(LimitReached, FileProblem):
    """No space (or quota) left for the write."""


def escape(path: str) -> PathEscapes:
    return PathEscapes(f"path escapes workspace root: {path!r}")


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    #: Bytes, for files whose size could be read.
    size: int | None


@dataclass(frozen=True)
class Described:
    """A path as seen through the symlinks inside the root: what sandboxd lists and probes."""

    name: str
    is_dir: bool
    size: int
    #: Seconds since the epoch (``st_mtime``).
    modified: float
    #: Permission bits (``0o644``).
    mode: int


def _described(name: str, st: os.stat_result) -> Described:
    return Described(name, stat.S_ISDIR(st.st_mode), st.st_size, st.st_mtime, stat.S_IMODE(st.st_mode))


def under_root(root: Path, path: str) -> str:
    """``path`` as sandboxd reads it, for the walk: ``..`` resolved by name first (``a/../../x``
    escapes even when ``a`` does not exist), and an absolute path inside ``root`` naming that place
    (``/workspace/src/main.py``); every other path is relative to the root."""
    prefix = str(root).rstrip("/")
    if path == prefix or path.startswith(prefix + "/"):
        path = path[len(prefix) :]
    if "\x00" in path:
        return path  # refused by the walk
    relative = os.path.normpath(path.lstrip("/"))
    if relative == ".." or relative.startswith("../"):
        raise escape(path)
    return relative


@dataclass
class OpenedFile:
    """A regular file opened for reading; the caller closes ``fd``."""

    fd: int
    size: int

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class PendingUpload:
    """A temporary file beside the target, renamed over it by :meth:`commit`; :meth:`abort` removes
    it. Either ends the upload (the second call does nothing)."""

    dir_fd: int
    name: str
    temp_name: str
    fd: int
    path: str
    size: int = 0
    done: bool = False

    def write(self, data: bytes) -> None:
        try:
            _write_all(self.fd, data)
        except OSError as exc:
            problem = DiskFull if exc.errno in (errno.ENOSPC, errno.EDQUOT) else FileChanged
            raise problem(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self.size += len(data)

    def commit(self) -> None:
        if self.done:
            return
        try:
            os.close(self.fd)
            os.rename(self.temp_name, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
        except OSError as exc:
            self._end(remove=True)
            if isinstance(exc, IsADirectoryError):
                raise FileProblem(f"is a directory: {self.path}") from None
            raise FileChanged(f"cannot put {self.path} in place: {exc.strerror or exc}") from None
        self._end(remove=False)

    def abort(self) -> None:
        if not self.done:
            os.close(self.fd)
            self._end(remove=True)

    def _end(self, *, remove: bool) -> None:
        self.done = True
        try:
            if remove:
                os.unlink(self.temp_name, dir_fd=self.dir_fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(self.dir_fd)


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _check_regular(st: os.stat_result, path: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise FileProblem(f"is a directory: {path}")
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem(f"not a regular file: {path}")


class WorkspaceFiles:
    """The file operations on one workspace root (already resolved)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    # --- the walk -----------------------------------------------------------------------------

    def _walk(
        self,
        path: str,
        final: Callable[[int, str, os.stat_result | None], T],
        *,
        follow_last: bool = True,
        make_parents: bool = False,
    ) -> T:
        """Walk ``path`` from the root and call ``final(dir_fd, name, lstat or None)`` on its last
        component (``name`` is ``"."`` when the path is a directory reached by ``..`` or the root).
        Symlinks are expanded inside the root (the last one only with ``follow_last``)."""
        if "\x00" in path:
            raise FileProblem(f"invalid path: {path!r}")
        todo = [part for part in reversed(path.split("/")) if part not in ("", ".")]
        stack: list[int] = []
        links = changes = 0
        try:
            stack.append(os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
            while todo:
                name = todo.pop()
                if name == "..":
                    if len(stack) == 1:
                        raise escape(path)
                    os.close(stack.pop())
                    continue
                st = _lstat(name, stack[-1])
                if st is not None and stat.S_ISLNK(st.st_mode) and (todo or follow_last):
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise FileProblem(f"invalid path: {path!r} (too many levels of symbolic links)")
                    target = os.readlink(name, dir_fd=stack[-1])
                    if target.startswith("/"):
                        relative = os.path.relpath(os.path.normpath(target), self.root)
                        if relative == ".." or relative.startswith("../"):
                            raise escape(path)
                        while len(stack) > 1:
                            os.close(stack.pop())
                        target = relative
                    todo.extend(part for part in reversed(target.split("/")) if part not in ("", "."))
                    continue
                if not todo:
                    return final(stack[-1], name, st)
                if st is None and make_parents:
                    try:
                        os.mkdir(name, dir_fd=stack[-1])
                    except FileExistsError:
                        pass
                    todo.append(name)  # look again: whatever is there now is walked like the rest
                    continue
                if st is None:
                    raise WorkspaceFileNotFound(f"not found: {path}")
                try:
                    fd = os.open(name, _PATH_FLAGS | os.O_DIRECTORY, dir_fd=stack[-1])
                except (FileNotFoundError, NotADirectoryError):
                    changes += 1
                    if st is not None and stat.S_ISDIR(st.st_mode) and changes <= MAX_CHANGES:
                        todo.append(name)  # replaced since the lstat: look again
                        continue
                    if make_parents:
                        raise FileProblem(f"a parent of {path} is a file") from None
                    raise WorkspaceFileNotFound(f"not found: {path}") from None
                stack.append(fd)
            return final(stack[-1], ".", os.fstat(stack[-1]))
        except PermissionError:
            raise FileAccessDenied(f"permission denied: {path}") from None
        except FileProblem:
            raise
        except OSError as exc:
            raise FileProblem(f"cannot access {path}: {exc.strerror or exc}") from None
        finally:
            for fd in stack:
                os.close(fd)

    # --- operations ---------------------------------------------------------------------------

    def list(self, path: str) -> list[Entry]:
        """The entries of a directory, sorted by name (types and sizes seen through symlinks)."""

        def listing(dir_fd: int, name: str, st: os.stat_result | None) -> list[Entry]:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            if not stat.S_ISDIR(st.st_mode):
                raise FileProblem(f"not a directory: {path}")
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENOENT):
                    raise FileChanged(f"{path} changed during the listing") from None
                raise
            try:
                return sorted((self._entry(fd, child) for child in os.listdir(fd)), key=lambda e: e.name)
            finally:
                os.close(fd)

        return self._walk(path, listing)

    @staticmethod
    def _entry(dir_fd: int, name: str) -> Entry:
        try:
            st = os.stat(name, dir_fd=dir_fd)
        except OSError:  # a dangling symlink, or gone since the listing
            return Entry(name, False, None)
        is_dir = stat.S_ISDIR(st.st_mode)
        return Entry(name, is_dir, None if is_dir else st.st_size)

    def is_dir(self, path: str) -> bool:
        """Whether ``path`` is a directory (``False`` for anything else, missing included)."""
        return self._walk(path, lambda _fd, _name, st: st is not None and stat.S_ISDIR(st.st_mode))

    def open_file(self, path: str) -> OpenedFile:
        """A regular file opened for reading (directories and special files refused)."""

        def opening(dir_fd: int, name: str, st: os.stat_result | None) -> OpenedFile:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            _check_regular(st, path)
            try:
                fd = os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=dir_fd)
            except FileNotFoundError:
                raise WorkspaceFileNotFound(f"not found: {path}") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise FileChanged(f"{path} changed while it was opened") from None
                raise
            try:
                opened = os.fstat(fd)
                _check_regular(opened, path)
            except BaseException:
                os.close(fd)
                raise
            return OpenedFile(fd, opened.st_size)

        return self._walk(path, opening)

    def read_bytes(self, path: str, limit: int = READ_LIMIT) -> bytes:
        """The whole file, refused (413) when it is larger than ``limit``."""
        opened = self.open_file(path)
        try:
            if opened.size > limit:
                raise too_large(path, opened.size, limit)
            data = read_at_most(opened.fd, limit + 1)
            if len(data) > limit:  # grew while read
                raise too_large(path, len(data), limit)
            return data
        finally:
            opened.close()

    def write_text(self, path: str, content: str) -> None:
        """Create or overwrite a regular file (parents created) with ``content`` in UTF-8."""
        data = content.encode("utf-8", errors="replace")

        def writing(dir_fd: int, name: str, st: os.stat_result | None) -> None:
            if st is not None:
                _check_regular(st, path)
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o666, dir_fd=dir_fd)
            except OSError as exc:
                raise _open_problem(exc, path) from None
            try:
                _check_regular(os.fstat(fd), path)
                os.ftruncate(fd, 0)
                _write_all(fd, data)
            finally:
                os.close(fd)

        self._walk(path, writing, make_parents=True)

    def begin_upload(self, path: str, mode: int | None = None) -> PendingUpload:
        """A temporary file beside ``path`` (parents created); ``commit`` puts it in place with
        ``mode``, or else keeping an existing file's permission bits."""

        def starting(dir_fd: int, name: str, st: os.stat_result | None) -> PendingUpload:
            if st is not None:
                _check_regular(st, path)
            if name == ".":
                raise FileProblem(f"is a directory: {path}")
            temp_name = f".{name}.upload-{uuid.uuid4().hex[:12]}"
            bits = mode if mode is not None else stat.S_IMODE(st.st_mode) if st is not None else 0o666
            fd = os.open(temp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, bits, dir_fd=dir_fd)
            if mode is not None or st is not None:
                os.fchmod(fd, bits)  # whatever the umask: as asked, or like the file it replaces
            return PendingUpload(os.dup(dir_fd), name, temp_name, fd, path)

        return self._walk(path, starting, make_parents=True)

    def delete(self, path: str) -> None:
        """Remove a file or a symlink (the link, not its target); directories are refused. A link
        pointing outside the root is refused like any escape."""

        def removing(dir_fd: int, name: str, st: os.stat_result | None) -> None:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            if stat.S_ISDIR(st.st_mode):
                raise FileProblem(f"cannot delete directories: {path}")
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                raise WorkspaceFileNotFound(f"not found: {path}") from None
            except IsADirectoryError:
                raise FileProblem(f"cannot delete directories: {path}") from None

        self._walk(path, lambda _fd, _name, _st: None)  # refuses a link that leads outside
        self._walk(path, removing, follow_last=False)

    def describe(self, path: str) -> Described:
        """What ``path`` is, seen through symlinks inside the root."""

        def describing(dir_fd: int, name: str, st: os.stat_result | None) -> Described:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            return _described(name, st)

        return self._walk(path, describing)

    def scan(self, path: str) -> builtins.list[Described]:
        """A directory's entries sorted by name, described through their symlinks; a link that is
        broken or leads outside the root is left out, as sandboxd lists."""

        def scanning(dir_fd: int, name: str, st: os.stat_result | None) -> list[tuple[str, os.stat_result]]:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            if not stat.S_ISDIR(st.st_mode):
                raise FileProblem(f"not a directory: {path}")
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
            try:
                found = []
                for child in os.listdir(fd):
                    child_st = _lstat(child, fd)
                    if child_st is not None:
                        found.append((child, child_st))
                return found
            finally:
                os.close(fd)

        described: builtins.list[Described] = []
        for child, st in self._walk(path, scanning):
            if not stat.S_ISLNK(st.st_mode):
                described.append(_described(child, st))
                continue
            try:  # the link's own walk: it must stay inside the root and lead somewhere
                target = self.describe(f"{path.rstrip('/')}/{child}")
            except FileProblem:
                continue
            described.append(Described(child, target.is_dir, target.size, target.modified, target.mode))
        return sorted(described, key=lambda entry: entry.name)

    def remove(self, path: str, *, recursive: bool) -> None:
        """Remove a file, a symlink (not its target) or a directory: an empty one, or with
        ``recursive`` everything in it (symlinks inside are removed, never followed). The root
        itself is emptied with ``recursive``, never removed."""
        root = os.stat(self.root)

        def removing(dir_fd: int, name: str, st: os.stat_result | None) -> None:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            if name == "." and (st.st_dev, st.st_ino) == (root.st_dev, root.st_ino):
                if not recursive:
                    raise DirectoryNotEmpty("cannot delete the root; pass recursive=true to clear its contents")
                fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=dir_fd)
                try:
                    for child in os.listdir(fd):
                        self._remove_entry(fd, child, recursive=True, path=path)
                finally:
                    os.close(fd)
                return
            if name == ".":  # a directory reached by "..": named by its own name, it is removed
                raise FileProblem(f"name the directory itself, not a path ending in '..': {path}")
            self._remove_entry(dir_fd, name, recursive=recursive, path=path)

        self._walk(path, lambda _fd, _name, _st: None)  # refuses a link that leads outside
        self._walk(path, removing, follow_last=False)

    @staticmethod
    def _remove_entry(dir_fd: int, name: str, *, recursive: bool, path: str) -> None:
        st = _lstat(name, dir_fd)
        if st is None:
            raise WorkspaceFileNotFound(f"not found: {path}")
        try:
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(name, dir_fd=dir_fd)
            elif recursive:
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.rmdir(name, dir_fd=dir_fd)
        except FileNotFoundError:
            raise WorkspaceFileNotFound(f"not found: {path}") from None
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise DirectoryNotEmpty(f"directory is not empty; pass recursive=true to remove it: {path}") from None
            raise

    def real_dir(self, path: str) -> str:
        """The real path of the directory ``path`` (a working directory for a process)."""

        def resolving(dir_fd: int, name: str, st: os.stat_result | None) -> str:
            if st is None:
                raise WorkspaceFileNotFound(f"not found: {path}")
            if not stat.S_ISDIR(st.st_mode):
                raise FileProblem(f"not a directory: {path}")
            fd = os.open(name, _PATH_FLAGS | os.O_DIRECTORY, dir_fd=dir_fd)
            try:
                return os.readlink(f"/proc/self/fd/{fd}")
            finally:
                os.close(fd)

        return self._walk(path, resolving)


def too_large(path: str, size: int, limit: int) -> FileProblem:
    return WorkspaceFileTooLarge(f"{path} is {size} bytes, larger than the {limit // (1024 * 1024)} MiB read limit")


def _open_problem(exc: OSError, path: str) -> FileProblem | OSError:
    if exc.errno == errno.EISDIR:
        return FileProblem(f"is a directory: {path}")
    if exc.errno in (errno.ENXIO, errno.ELOOP):  # a FIFO without reader, a link swapped in
        return FileChanged(f"{path} changed while it was opened")
    return exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_at_most(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes from ``fd`` (fewer only at end of file)."""
    parts: list[bytes] = []
    remaining = count
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1024 * 1024))
        if not chunk:
            break
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def iter_chunks(opened: OpenedFile, chunk_size: int = 256 * 1024) -> Generator[bytes, None, None]:
    """The file's bytes up to the size it had when opened (a file that grows is not followed),
    closing it at the end."""
    remaining = opened.size
    try:
        while remaining > 0:
            chunk = os.read(opened.fd, min(chunk_size, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk
    finally:
        opened.close()
