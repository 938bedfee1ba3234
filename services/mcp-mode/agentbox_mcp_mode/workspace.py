"""The run workspaces under ``AICODEBOX_WORKSPACE`` (``run_prompt`` ``workspace``, API ``/run`` and
the OpenAI endpoint, cron jobs, Telegram chats): a subpath of the root; absolute paths and any ``..``
part are refused outright; the directory is created. Files inside a workspace are opened race-free
with :mod:`agentbox_common.workspace_files`, never by path.

Errors are :class:`WorkspaceError` whose message names the offending path; nothing is touched
before the check passes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from agentbox_common.errors import Invalid


class WorkspaceError(Invalid):
    """A path is outside the workspace or otherwise unusable; the message names it."""


def _inside(root: Path, candidate: Path) -> bool:
    return candidate == root or root in candidate.parents


class Workspace:
    """The workspace root (already resolved) and its run directories."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

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
