"""The typed inputs of the tree-walking actions (list, grep, glob). Each door builds one from its own
request in one call (:meth:`Query.of`), so the options are named once, here, with their defaults."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self


@dataclass(frozen=True)
class Query:
    @classmethod
    def of(cls, fields: Mapping[str, Any], **aliases: str) -> Self:
        """The query a request's ``fields`` name (``aliases``: a query field's name in the request,
        where it differs); a field the request leaves out or sets to null keeps its default."""
        named = {field.name: aliases.get(field.name, field.name) for field in dataclasses.fields(cls)}
        return cls(**{name: fields[key] for name, key in named.items() if fields.get(key) is not None})


@dataclass(frozen=True)
class ListQuery(Query):
    recursive: bool = False
    show_hidden: bool = False
    #: Only files with these extensions (``.py`` or ``py``); directories are always listed.
    file_types: Sequence[str] | None = None
    #: With ``recursive``: how deep to descend (None: no limit).
    max_depth: int | None = None
    include_size: bool = True
    include_permissions: bool = False
    sort_by: str = "name"
    sort_desc: bool = False


@dataclass(frozen=True)
class GrepQuery(Query):
    #: A regex, or a literal with ``fixed_strings``; required (the plane refuses an empty one).
    pattern: str | None = None
    include: Sequence[str] | None = None
    exclude: Sequence[str] | None = None
    case_insensitive: bool = False
    fixed_strings: bool = False
    context_before: int = 0
    context_after: int = 0
    max_results: int | None = None
    #: Skip files larger than this (``500K``, ``1M``; never above 1 MiB).
    max_file_size: str | None = None
    multiline: bool = False
    #: Matches to skip before the first one returned.
    offset: int = 0
    #: A ripgrep file type such as ``py``, adding its globs to ``include``.
    file_type: str | None = None
    recursive: bool = True


@dataclass(frozen=True)
class GlobQuery(Query):
    #: A path glob such as ``**/*.py``; required (the plane refuses an empty one).
    pattern: str | None = None
    include: Sequence[str] | None = None
    exclude: Sequence[str] | None = None
    include_hidden: bool = False
    files_only: bool = True
    include_metadata: bool = True
    max_results: int | None = None
    sort_by: str = "path"
    sort_desc: bool = False
