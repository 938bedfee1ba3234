"""Walking directory trees for the file plane's find, list, grep and glob actions, ripgrep- and
find-style, with aiod's limits. Every function here blocks: the plane calls them in a worker thread.
A walk looks at no more than ``SCAN_LIMIT`` entries, so even ``/`` ends in bounded time."""

from __future__ import annotations

import datetime
import errno as errno_codes
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from .errors import FileOperationError, compile_pattern
from .queries import GlobQuery, GrepQuery, ListQuery
from .results import (
    DirectoryListing,
    EntryMetadata,
    FileEntry,
    FoundFiles,
    GlobEntry,
    GlobResult,
    GrepMatch,
    GrepResult,
)

#: aiod's limits: grep matches and the size of a grepped file, glob, list and find results.
GREP_MAX_MATCHES = 500
GREP_MAX_FILE_SIZE = 1024 * 1024
GLOB_MAX_RESULTS = 5000
LIST_MAX_RESULTS = 10000
FIND_MAX_RESULTS = 10000
#: The most directory entries one find/list/grep/glob call looks at.
SCAN_LIMIT = 200_000

#: ripgrep ``--type`` aliases the REST grep route accepts, as file-name globs.
RG_TYPES = {
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.h"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "go": ("*.go",),
    "html": ("*.html", "*.htm"),
    "java": ("*.java",),
    "js": ("*.js", "*.mjs", "*.cjs", "*.jsx"),
    "json": ("*.json",),
    "md": ("*.md", "*.markdown"),
    "py": ("*.py", "*.pyi"),
    "rb": ("*.rb",),
    "rust": ("*.rs",),
    "sh": ("*.sh", "*.bash", "*.zsh"),
    "sql": ("*.sql",),
    "toml": ("*.toml",),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "txt": ("*.txt",),
    "yaml": ("*.yaml", "*.yml"),
}


def open_nonblocking(real: str) -> IO[bytes]:
    """Open for reading without waiting for a FIFO's writer (no effect on regular files)."""
    return os.fdopen(os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb")


def read_up_to(handle: IO[bytes], size: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a file ``fstat`` said has ``size`` (no more than ``limit``):
    one read of ``size + 1`` when it has not grown, since ``read(limit + 1)`` allocates, then
    shrinks, a buffer of ``limit`` bytes (16 MiB for a 1 KiB file: 13 µs of a 17 µs read); read on,
    up to the limit, when it has grown or said 0 (procfs)."""
    data = handle.read(size + 1)
    if len(data) > size:
        data += handle.read(limit + 1 - len(data))
    return data


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only, each keeping its terminator (line numbers agree with ``grep -n``)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
        return [line + "\n" for line in lines]
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def iso_time(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, tz=datetime.UTC).isoformat()


class ScanBudget:
    """Counts directory entries visited so one call cannot walk forever."""

    def __init__(self, limit: int = SCAN_LIMIT) -> None:
        self.left = limit
        self.exhausted = False

    def take(self) -> bool:
        if self.left <= 0:
            self.exhausted = True
            return False
        self.left -= 1
        return True


def walk_tree(
    root: str,
    budget: ScanBudget,
    *,
    include_hidden: bool = True,
    max_depth: int | None = None,
    prune: Callable[[os.DirEntry[str], str], bool] | None = None,
) -> Iterator[tuple[os.DirEntry[str], str, int]]:
    """Yield ``(entry, relative_path, depth)`` depth-first in name order without following symlinked
    directories. An unreadable root raises; unreadable directories below it are skipped (as find does)."""
    stack: list[tuple[str, str, int]] = [(root, "", 1)]
    while stack:
        directory, prefix, depth = stack.pop()
        try:
            with os.scandir(directory) as iterator:
                entries = sorted(iterator, key=lambda e: e.name)
        except OSError:
            if directory == root:
                raise
            continue
        subdirectories = []
        for entry in entries:
            if not budget.take():
                return
            if not include_hidden and entry.name.startswith("."):
                continue
            relative = prefix + entry.name
            if prune is not None and prune(entry, relative):
                continue
            yield entry, relative, depth
            if (max_depth is None or depth < max_depth) and _is_dir(entry, follow=False):
                subdirectories.append((entry.path, relative + "/", depth + 1))
        stack.extend(reversed(subdirectories))


def _is_dir(entry: os.DirEntry[str], follow: bool = True) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def _entry_stat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat()
    except OSError:
        try:
            return entry.stat(follow_symlinks=False)  # a dangling symlink
        except OSError:
            return None


def _require_directory(real: str, operation: str, path: str) -> None:
    info = os.stat(real)
    if not stat.S_ISDIR(info.st_mode):
        raise FileOperationError.from_errno(errno_codes.ENOTDIR, operation, path)


def _matches_any(name: str, relative: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(relative, p) for p in patterns)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a path glob (``**``, ``*``, ``?``, ``[...]``, ``{a,b}``) into an anchored regex.
    ``*`` stays within one path segment; ``**/`` spans any number of directories (including none)."""
    return re.compile(_glob_body(pattern) + r"\Z", re.DOTALL)


def _glob_body(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif char == "{":
            end = pattern.find("}", i)
            if end == -1:
                out.append(re.escape(char))
            else:
                options = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_glob_body(option) for option in options) + ")")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _parse_size(value: str | None, operation: str, path: str) -> int:
    """``1M``, ``500K``, ``2048`` -> bytes, never above the 1 MiB grep limit."""
    if value is None or value == "":
        return GREP_MAX_FILE_SIZE
    found = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)[bB]?\s*", value)
    if not found:
        raise FileOperationError.invalid(operation, path, f"invalid max_file_size {value!r} (use e.g. 500K, 1M)")
    scale = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[found.group(2).lower()]
    return min(int(found.group(1)) * scale, GREP_MAX_FILE_SIZE)


def _clamp(value: int | None, default: int, limit: int) -> int:
    if value is None:
        return default
    return max(1, min(int(value), limit))


def find_files(real: str, path: str, pattern: str) -> FoundFiles:
    _require_directory(real, "find", path)
    budget = ScanBudget()
    files: list[str] = []
    truncated = False
    for entry, _relative, _depth in walk_tree(real, budget):
        if fnmatch.fnmatchcase(entry.name, pattern) and not _is_dir(entry):
            if len(files) >= FIND_MAX_RESULTS:
                truncated = True
                break
            files.append(entry.path)
    return FoundFiles(path, tuple(sorted(files)), truncated or budget.exhausted)


def _file_entry(entry: os.DirEntry[str], include_size: bool, include_permissions: bool) -> FileEntry:
    is_directory = _is_dir(entry)
    info = _entry_stat(entry)
    extension = os.path.splitext(entry.name)[1] if not is_directory else ""
    return FileEntry(
        name=entry.name,
        path=entry.path,
        is_directory=is_directory,
        size=info.st_size if include_size and info is not None else None,
        modified_time=iso_time(info.st_mtime) if info is not None else None,
        permissions=format(stat.S_IMODE(info.st_mode), "03o") if include_permissions and info else None,
        extension=extension or None,
    )


_LIST_SORTS: dict[str, Callable[[FileEntry], Any]] = {
    "name": lambda f: f.name,
    "size": lambda f: (f.size or 0, f.name),
    "modified": lambda f: (f.modified_time or "", f.name),
    "type": lambda f: (not f.is_directory, f.extension or "", f.name),
}


def list_directory(real: str, path: str, query: ListQuery) -> DirectoryListing:
    _require_directory(real, "list", path)
    sort_by = query.sort_by or "name"
    if sort_by not in _LIST_SORTS:
        raise FileOperationError.invalid("list", path, f"sort_by must be one of {', '.join(_LIST_SORTS)}")
    depth = (query.max_depth if query.max_depth and query.max_depth > 0 else None) if query.recursive else 1
    extensions = {("." + t.lstrip(".")).lower() for t in query.file_types or ()}
    budget = ScanBudget()
    files: list[FileEntry] = []
    truncated = False
    for entry, _relative, _depth in walk_tree(real, budget, include_hidden=query.show_hidden, max_depth=depth):
        info = _file_entry(entry, query.include_size, query.include_permissions)
        if extensions and not info.is_directory and (info.extension or "").lower() not in extensions:
            continue
        if len(files) >= LIST_MAX_RESULTS:
            truncated = True
            break
        files.append(info)
    files.sort(key=_LIST_SORTS[sort_by], reverse=query.sort_desc)
    return DirectoryListing(path, tuple(files), truncated or budget.exhausted)


def grep_files(real: str, path: str, query: GrepQuery) -> GrepResult:
    pattern = query.pattern or ""
    flags = (re.IGNORECASE if query.case_insensitive else 0) | (re.MULTILINE | re.DOTALL if query.multiline else 0)
    regex = compile_pattern(pattern, "grep", path, flags, literal=query.fixed_strings)
    limit = _clamp(query.max_results, GREP_MAX_MATCHES, GREP_MAX_MATCHES)
    size_limit = _parse_size(query.max_file_size, "grep", path)
    includes = list(query.include or ())
    if file_type := query.file_type:
        if file_type not in RG_TYPES:
            raise FileOperationError.invalid("grep", path, f"unknown type {file_type!r} ({', '.join(RG_TYPES)})")
        includes.extend(RG_TYPES[file_type])
    excludes = list(query.exclude or ())
    before, after = max(0, int(query.context_before)), max(0, int(query.context_after))
    skip = max(0, query.offset)

    info = os.stat(real)
    budget = ScanBudget()
    if stat.S_ISDIR(info.st_mode):
        walk = walk_tree(
            real,
            budget,
            include_hidden=False,
            max_depth=None if query.recursive else 1,
            prune=lambda entry, relative: bool(excludes) and _matches_any(entry.name, relative, excludes),
        )
        candidates: Iterator[tuple[str, str]] = (
            (entry.path, relative)
            for entry, relative, _depth in walk
            if not _is_dir(entry) and (not includes or _matches_any(entry.name, relative, includes))
        )
    else:
        candidates = iter([(real, os.path.basename(real))])

    matches: list[GrepMatch] = []
    searched = matched_files = 0
    truncated = False
    for file_path, _relative in candidates:
        text = _grep_text(file_path, size_limit)
        if text is None:
            continue
        searched += 1
        found = False
        for match in _grep_file(regex, file_path, text, query.multiline, before, after):
            found = True
            if skip:
                skip -= 1
                continue
            if len(matches) >= limit:
                truncated = True
                break
            matches.append(match)
        matched_files += found
        if truncated:
            break
    return GrepResult(path, pattern, tuple(matches), searched, matched_files, truncated or budget.exhausted)


def _grep_text(file_path: str, size_limit: int) -> str | None:
    """A file's text for grep, or None for what ripgrep skips: too big, binary (NUL byte), unreadable."""
    try:
        with open_nonblocking(file_path) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > size_limit:
                return None
            data = read_up_to(handle, info.st_size, size_limit)
    except OSError:
        return None
    if len(data) > size_limit or b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _grep_file(
    regex: re.Pattern[str], file_path: str, text: str, multiline: bool, before: int, after: int
) -> Iterator[GrepMatch]:
    lines = [line.rstrip("\n").rstrip("\r") for line in split_lines(text)]

    def match(first: int, last: int, content: str) -> GrepMatch:
        return GrepMatch(
            file_path,
            first + 1,
            content,
            tuple(lines[max(0, first - before) : first]) if before else None,
            tuple(lines[last + 1 : last + 1 + after]) if after else None,
        )

    if multiline:
        for found in regex.finditer(text):
            first = text.count("\n", 0, found.start())
            last = first + text.count("\n", found.start(), max(found.start(), found.end() - 1))
            yield match(first, last, "\n".join(lines[first : last + 1]))
        return
    for index, line in enumerate(lines):
        if regex.search(line):
            yield match(index, index, line)


_GLOB_SORTS: dict[str, Callable[[GlobEntry], Any]] = {
    "path": lambda f: f.path,
    "name": lambda f: (f.name, f.path),
    "size": lambda f: ((f.metadata and f.metadata.size) or 0, f.path),
    "modified": lambda f: ((f.metadata and f.metadata.modified_time) or "", f.path),
}


def glob_files(real: str, path: str, query: GlobQuery) -> GlobResult:
    _require_directory(real, "glob", path)
    pattern, sort_by = query.pattern or "", query.sort_by or "path"
    if sort_by not in _GLOB_SORTS:
        raise FileOperationError.invalid("glob", path, f"sort_by must be one of {', '.join(_GLOB_SORTS)}")
    relative_pattern = pattern
    if os.path.isabs(pattern):
        root = real.rstrip("/") + "/"
        if not pattern.startswith(root):
            raise FileOperationError.invalid("glob", path, f"absolute pattern {pattern!r} is outside {path}")
        relative_pattern = pattern[len(root) :]
    regex = glob_to_regex(relative_pattern)
    depth = None if "**" in relative_pattern else relative_pattern.count("/") + 1
    limit = _clamp(query.max_results, GLOB_MAX_RESULTS, GLOB_MAX_RESULTS)
    excludes = list(query.exclude or ())
    includes = list(query.include or ())
    budget = ScanBudget()
    walk = walk_tree(
        real,
        budget,
        include_hidden=query.include_hidden,
        max_depth=depth,
        prune=lambda entry, relative: bool(excludes) and _matches_any(entry.name, relative, excludes),
    )
    files: list[GlobEntry] = []
    truncated = False
    for entry, relative, _depth in walk:
        if not regex.match(relative):
            continue
        is_directory = _is_dir(entry)
        if (query.files_only and is_directory) or (includes and not _matches_any(entry.name, relative, includes)):
            continue
        if len(files) >= limit:
            truncated = True
            break
        metadata = None
        if query.include_metadata:
            info = _entry_stat(entry)
            metadata = EntryMetadata(
                is_directory,
                info.st_size if info is not None else None,
                iso_time(info.st_mtime) if info is not None else None,
            )
        files.append(GlobEntry(entry.path, entry.name, metadata))
    files.sort(key=_GLOB_SORTS[sort_by], reverse=query.sort_desc)
    return GlobResult(path, pattern, tuple(files), truncated or budget.exhausted)
