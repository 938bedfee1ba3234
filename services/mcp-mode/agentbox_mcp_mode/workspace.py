"""Confinement to ``AICODEBOX_WORKSPACE`` by path (the MCP file tools and ``/files`` open files
race-free with :mod:`.workspace_files` instead).

* File paths (:meth:`Workspace.resolve_file`): a leading ``/`` is stripped, so an absolute path is
  relative to the root; the path is resolved (symlinks followed) and must still be inside the root.

* Run workspaces (``run_prompt`` ``workspace``, API ``/run`` and the OpenAI endpoint): a subpath of
  the root; absolute paths and any ``..`` part are refused outright; the directory is created.

Errors are :class:`WorkspaceError` whose message names the offending path; nothing is touched
before the check passes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from agentbox_common.errors import ErrorKind, PlaneError


class WorkspaceError(PlaneError):
    """A path is outside the workspace or otherwise unusable; the message names it."""

    kind = ErrorKind.INVALID


def _inside(root: Path, candidate: Path) -> bool:
    return candidate == root or root in candidate.parents


class Workspace:
    """The workspace root (already resolved) and the two path resolvers."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def resolve_file(self, path: str) -> Path:
        """The resolved location of ``path`` (a leading ``/`` is relative to the root); raises
        WorkspaceError if it escapes. A check on a path string that can change before it is
        opened: the MCP file tools and ``/files`` use :mod:`.workspace_files` instead."""
        relative = path.lstrip("/")
        try:
            candidate = (self.root / relative).resolve()
        except (OSError, ValueError, RuntimeError) as exc:  # NUL bytes, symlink loops
            raise WorkspaceError(f"invalid path: {path!r} ({exc})") from None
        if not _inside(self.root, candidate):
            raise WorkspaceError(f"path escapes workspace root: {path!r}")
        return candidate

    def run_directory(self, subpath: str) -> Path:
        """The directory a run works in: the root, or a created subdirectory of it."""
        if not subpath:
            return self.root
        pure = PurePosixPath(subpath)
        if pure.is_absolute() or ".." in pure.parts or "\x00" in subpath:
            raise WorkspaceError(f"invalid workspace subpath: {subpath!r}")
        candidate = (self.root / pure).resolve()
        if not _inside(self.root, candidate):
            raise WorkspaceError(f"invalid workspace subpath: {subpath!r}")
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise WorkspaceError(f"invalid workspace subpath: {subpath!r} is not a directory") from None
        except OSError as exc:
            raise WorkspaceError(f"cannot create workspace {subpath!r}: {exc.strerror or exc}") from None
        return candidate
