"""Files between Telegram and a chat's workspace: ``[SEND_FILE: relative/path]`` markers in an answer
(and ``/fetch``) send a workspace file, confined to that workspace and at most 50 MB; uploads are
saved there under a safe name."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..workspace import Workspace, WorkspaceError

SEND_FILE = re.compile(r"\[SEND_FILE:\s*([^\]\n]+?)\s*\]")
#: The Bot API's upload limit for bots.
MAX_SEND_BYTES = 50 * 1024 * 1024


class FileRefused(ValueError):
    """The file cannot be sent; the message says why."""


def extract_send_files(text: str) -> tuple[str, list[str]]:
    """The answer without its ``[SEND_FILE: …]`` markers, and the paths they name (in order)."""
    paths = [match.group(1) for match in SEND_FILE.finditer(text)]
    return SEND_FILE.sub("", text).strip(), paths


def sendable(directory: Path, path: str) -> Path:
    """The file ``path`` names inside ``directory``; FileRefused when outside, missing or too big."""
    try:
        target = Workspace(directory).resolve_file(path)
    except WorkspaceError:
        raise FileRefused(f"{path}: outside the workspace, not sent") from None
    if not target.is_file():
        raise FileRefused(f"{path}: no such file in the workspace")
    if target.stat().st_size > MAX_SEND_BYTES:
        raise FileRefused(f"{path}: larger than 50 MB, not sent")
    return target


def upload_name(name: str | None, fallback: str) -> str:
    """A plain file name for an upload (no directories, never ``.``/``..``)."""
    candidate = PurePosixPath((name or "").replace("\\", "/")).name.strip()
    return candidate if candidate not in ("", ".", "..") else fallback
