"""Managing paths for the file plane: ``stat``, ``mkdir``, ``copy``, ``move`` and ``delete``, aiod's
semantics. Each function blocks (the plane runs it in a worker thread) and takes the resolved path
first, then the path as the caller gave it (for messages), as the plane's other operations do.

A copy or move never silently clobbers: an existing destination is ``already_exists`` unless
``overwrite`` is set. Symlinks are never followed when removing or replacing, so a link to a
directory elsewhere is unlinked, not emptied."""

from __future__ import annotations

import contextlib
import errno as errno_codes
import os
import secrets
import shutil
import stat

from .errors import FileErrorType, FileOperationError
from .results import PathChanged, PathInfo
from .tree import iso_time


def stat_path(real: str, path: str, follow_symlinks: bool) -> PathInfo:
    link = os.lstat(real)
    info = os.stat(real) if follow_symlinks and stat.S_ISLNK(link.st_mode) else link
    return PathInfo(
        path=path,
        size=info.st_size,
        permissions=format(stat.S_IMODE(info.st_mode), "03o"),
        is_directory=stat.S_ISDIR(info.st_mode),
        is_symlink=stat.S_ISLNK(link.st_mode),
        modified_time=iso_time(info.st_mtime),
    )


def make_directory(real: str, path: str, parents: bool) -> PathChanged:
    if parents:
        existed = os.path.isdir(real)
        os.makedirs(real, exist_ok=True)
        return PathChanged(path, created=not existed)
    os.mkdir(real)
    return PathChanged(path)


def _is_real_directory(real: str) -> bool:
    """A directory, not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(real).st_mode)
    except FileNotFoundError:
        return False


def remove(real: str) -> None:
    """Remove a file, link or whole directory without following links."""
    if _is_real_directory(real):
        shutil.rmtree(real)
    else:
        os.unlink(real)


def _refuse_root(real: str, operation: str, path: str) -> None:
    if os.path.realpath(real) == "/":
        raise FileOperationError.invalid(operation, path, "refusing to operate on /", FileErrorType.INVALID_PATH)


def _check_destination(source: str, destination: str, operation: str, path: str, overwrite: bool) -> None:
    os.lstat(source)  # a missing source is not_found, before the destination is looked at
    if os.path.lexists(destination) and not overwrite:
        raise FileOperationError.from_errno(errno_codes.EEXIST, operation, destination)
    if _is_real_directory(source):
        inner = os.path.realpath(destination)
        outer = os.path.realpath(source)
        if inner == outer or inner.startswith(outer.rstrip("/") + "/"):
            raise FileOperationError.invalid(
                operation, path, "cannot copy or move a directory into itself", FileErrorType.INVALID_TARGET
            )


def _sibling(destination: str, purpose: str) -> str:
    parent = os.path.dirname(destination.rstrip("/")) or "/"
    return os.path.join(parent, f".aiod-{purpose}-{secrets.token_hex(8)}.part")


def _put_in_place(staged: str, destination: str) -> None:
    """Move ``staged`` (next to ``destination``) over it: atomically for a file, and for a directory
    by moving the old one aside first, so the destination is never half one and half the other."""
    if _is_real_directory(destination):
        aside = _sibling(destination, "old")
        os.rename(destination, aside)
        try:
            os.rename(staged, destination)
        except BaseException:
            os.rename(aside, destination)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    elif _is_real_directory(staged) and os.path.lexists(destination):
        os.unlink(destination)
        os.rename(staged, destination)
    else:
        os.replace(staged, destination)


def copy_path(real: str, path: str, destination: str, overwrite: bool) -> PathChanged:
    """``real`` (the source) copied to ``destination`` (resolved by the plane), links kept as links."""
    _check_destination(real, destination, "copy", path, overwrite)
    parent = os.path.dirname(destination.rstrip("/")) or "/"
    os.makedirs(parent, exist_ok=True)
    staged = _sibling(destination, "copy")
    try:
        if _is_real_directory(real):
            shutil.copytree(real, staged, symlinks=True)
        else:
            shutil.copy2(real, staged, follow_symlinks=False)
        _put_in_place(staged, destination)
    except BaseException:
        with contextlib.suppress(OSError):
            remove(staged)
        raise
    return PathChanged(destination, source=path)


def move_path(real: str, path: str, destination: str, overwrite: bool) -> PathChanged:
    _refuse_root(real, "move", path)
    _check_destination(real, destination, "move", path, overwrite)
    parent = os.path.dirname(destination.rstrip("/")) or "/"
    os.makedirs(parent, exist_ok=True)
    try:
        if os.path.lexists(destination):
            _put_in_place_moved(real, destination)
        else:
            os.rename(real, destination)
    except OSError as exc:
        if exc.errno != errno_codes.EXDEV:
            raise
        copy_path(real, path, destination, overwrite)  # another file system: copy, then remove
        remove(real)
    return PathChanged(destination, source=path)


def _put_in_place_moved(real: str, destination: str) -> None:
    """An overwriting move: a file over a file is one rename; anything else goes through
    :func:`_put_in_place`, after the source is renamed next to the destination."""
    if not _is_real_directory(real) and not _is_real_directory(destination):
        os.replace(real, destination)
        return
    staged = _sibling(destination, "move")
    os.rename(real, staged)
    try:
        _put_in_place(staged, destination)
    except BaseException:
        os.rename(staged, real)
        raise


def delete_path(real: str, path: str, recursive: bool) -> PathChanged:
    _refuse_root(real, "delete", path)
    if _is_real_directory(real):
        if recursive:
            shutil.rmtree(real)
        else:
            os.rmdir(real)  # ENOTEMPTY for a non-empty directory
    else:
        os.unlink(real)
    return PathChanged(path)
