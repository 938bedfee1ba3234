"""The file system capability: the file operations (:mod:`.operations`, walking trees in
:mod:`.tree`), their typed results (:mod:`.results`) and errors (:mod:`.errors`), the str_replace
editor on top of them (:mod:`.editor`), file watchers (:mod:`.watch`) and document-to-Markdown
conversion (:mod:`.convert`). The doors write every result out; nothing here builds a wire shape."""

from .convert import Converted, ConvertError, ConvertPlane, SourceNotFound
from .editor import COMMANDS, REPLACE_MODES, EditorError, EditorPlane, EditorResult
from .errors import (
    FileExists,
    FileNotFound,
    FileOperationError,
    FileRequestInvalid,
    FileTooLarge,
    NoSpaceLeft,
)
from .operations import ENCODINGS, READ_LIMIT, FilePlane
from .queries import GlobQuery, GrepQuery, ListQuery, Query
from .results import (
    DirectoryListing,
    DownloadTarget,
    EntryMetadata,
    FileEntry,
    FileRead,
    FileReplaced,
    FileResult,
    FileSearch,
    FileWritten,
    FoundFiles,
    GlobEntry,
    GlobResult,
    GrepMatch,
    GrepResult,
    SavedUpload,
)
from .watch import (
    MAX_WAIT_SECONDS,
    FileWatchPlane,
    Watcher,
    WatchError,
    WatchEvent,
    WatchLimit,
    WatchNotFound,
    WatchOptions,
    WatchTimeout,
)

__all__ = [
    "COMMANDS",
    "ENCODINGS",
    "MAX_WAIT_SECONDS",
    "READ_LIMIT",
    "REPLACE_MODES",
    "ConvertError",
    "ConvertPlane",
    "Converted",
    "DirectoryListing",
    "DownloadTarget",
    "EditorError",
    "EditorPlane",
    "EditorResult",
    "EntryMetadata",
    "FileEntry",
    "FileExists",
    "FileNotFound",
    "FileOperationError",
    "FilePlane",
    "FileRead",
    "FileReplaced",
    "FileRequestInvalid",
    "FileResult",
    "FileSearch",
    "FileTooLarge",
    "FileWatchPlane",
    "FileWritten",
    "FoundFiles",
    "GlobEntry",
    "GlobQuery",
    "GlobResult",
    "GrepMatch",
    "GrepQuery",
    "GrepResult",
    "ListQuery",
    "NoSpaceLeft",
    "Query",
    "SavedUpload",
    "SourceNotFound",
    "WatchError",
    "WatchEvent",
    "WatchLimit",
    "WatchNotFound",
    "WatchOptions",
    "WatchTimeout",
    "Watcher",
]
