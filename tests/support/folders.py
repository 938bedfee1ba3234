"""Folders a test makes before the code under test runs (which expects them to exist)."""

from __future__ import annotations

from pathlib import Path


def new_folder(parent: Path, name: str) -> Path:
    """``parent / name``, made now; failing if something is already there."""
    path = parent / name
    path.mkdir()
    return path
