"""What the file plane's operations return: frozen records the doors write out (the MCP tool as
aiod's JSON objects, the REST routes as the agent-sandbox SDK's models). Field names are aiod's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO


@dataclass(frozen=True)
class FileRead:
    path: str
    content: str


@dataclass(frozen=True)
class FileWritten:
    path: str
    bytes_written: int


@dataclass(frozen=True)
class FileReplaced:
    path: str
    replaced_count: int


@dataclass(frozen=True)
class FileSearch:
    """The lines of one file matching a regex, and their 1-based numbers."""

    path: str
    matches: tuple[str, ...]
    line_numbers: tuple[int, ...]

    @property
    def match_count(self) -> int:
        return len(self.matches)


@dataclass(frozen=True)
class FoundFiles:
    """Files under ``path`` whose name matches a glob, sorted."""

    path: str
    files: tuple[str, ...]
    truncated: bool

    @property
    def file_count(self) -> int:
        return len(self.files)


@dataclass(frozen=True)
class FileEntry:
    """One directory entry as ``list`` reports it; ``size``/``permissions`` only when asked for."""

    name: str
    path: str
    is_directory: bool
    size: int | None
    modified_time: str | None
    permissions: str | None
    extension: str | None


@dataclass(frozen=True)
class DirectoryListing:
    path: str
    files: tuple[FileEntry, ...]
    truncated: bool

    @property
    def total_count(self) -> int:
        return len(self.files)

    @property
    def directory_count(self) -> int:
        return sum(1 for entry in self.files if entry.is_directory)

    @property
    def file_count(self) -> int:
        return self.total_count - self.directory_count


@dataclass(frozen=True)
class GrepMatch:
    """One match; the context lines are None when no context was asked for (not merely empty)."""

    file: str
    line_number: int
    line_content: str
    context_before: tuple[str, ...] | None = None
    context_after: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GrepResult:
    path: str
    pattern: str
    matches: tuple[GrepMatch, ...]
    files_searched: int
    files_matched: int
    truncated: bool

    @property
    def match_count(self) -> int:
        return len(self.matches)


@dataclass(frozen=True)
class EntryMetadata:
    is_directory: bool
    size: int | None
    modified_time: str | None


@dataclass(frozen=True)
class GlobEntry:
    """A path matching the glob; ``metadata`` is None when it was not asked for."""

    path: str
    name: str
    metadata: EntryMetadata | None


@dataclass(frozen=True)
class GlobResult:
    path: str
    pattern: str
    files: tuple[GlobEntry, ...]
    truncated: bool

    @property
    def total_count(self) -> int:
        return len(self.files)


#: The result of each of the eight ``sandbox_file_operations`` actions.
FileResult = (
    FileRead | FileWritten | FileReplaced | FileSearch | FoundFiles | DirectoryListing | GrepResult | GlobResult
)


@dataclass(frozen=True)
class SavedUpload:
    """Where an upload was stored (a directory target adds the upload's own name) and its size."""

    file_path: str
    file_size: int


@dataclass(frozen=True)
class DownloadTarget:
    """A regular file to stream, already open. ``path`` names the open file itself
    (``/proc/self/fd/N``), so a name swapped for a FIFO or another file after the checks changes
    nothing; ``name`` is the file's own name and ``info`` its ``stat``. :meth:`close` once sent."""

    path: str
    name: str
    info: os.stat_result
    handle: IO[bytes]

    def close(self) -> None:
        self.handle.close()


@dataclass(frozen=True)
class PathInfo:
    """One path's metadata (``stat``); ``is_symlink`` describes the name itself, the rest what it
    points at unless the link was not followed."""

    path: str
    size: int
    permissions: str
    is_directory: bool
    is_symlink: bool
    modified_time: str


@dataclass(frozen=True)
class PathChanged:
    """What ``mkdir``, ``copy``, ``move`` and ``delete`` did: the path they changed, and the source
    of a copy or move."""

    path: str
    source: str | None = None
    #: ``mkdir``: false when the directory was already there (``parents`` accepts an existing one).
    created: bool = True


@dataclass(frozen=True)
class TreeImported:
    """How a tar stream landed in a directory: ``rename`` (the destination did not exist, the staged
    tree took its place whole) or ``merge`` (overlaid entry by entry on the existing directory)."""

    path: str
    mode: str
    entries: int
    bytes_written: int
