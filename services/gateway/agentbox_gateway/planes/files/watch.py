"""File watchers: inotify through ``watchfiles``, for ``/v1/file/watch*`` and ``/v2/watch``. A watcher
numbers its events (``seq``), keeps the latest ones in a bounded ring, and answers "what happened
since cursor N" (:class:`WatchPage`: saying when events after N were dropped from the ring before
they were read), optionally waiting for the next one; ``wait`` watches one path until one event.
A shared watcher (``subscribe``) is reused by every subscription with the same options and stops
when the last one is released. The number of watchers is bounded (AIO's 128): past it,
:class:`WatchLimit`."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import fnmatch
import itertools
import logging
import os
import secrets
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from watchfiles import Change, awatch

from agentbox_common.errors import Expired, Invalid, LimitReached, NotFound

logger = logging.getLogger(__name__)

MAX_WATCHERS = 128
#: Events a watcher keeps; older ones are dropped (a cursor before them reads from the oldest kept,
#: and its page says ``overflow``).
EVENTS_KEPT = 10_000
MAX_WAIT_SECONDS = 300
#: The most entries reported from inside one batch's newly created directories.
NEW_DIRECTORY_SCAN_LIMIT = 1000

_KINDS = {Change.added: "create", Change.modified: "write", Change.deleted: "remove"}
#: The order of one path's changes inside one batch (``watchfiles`` hands a batch over as a set).
_ORDER = {"create": 0, "write": 1, "remove": 2}
EVENT_TYPES = frozenset({"create", "write", "remove", "rename", "chmod"})
#: AIO's default ``exclude`` (a caller's list replaces it): VCS, dependency and byte-code folders,
#: editor leftovers.
DEFAULT_EXCLUDE = (
    ".git",
    "node_modules",
    "__pycache__",
    ".venv",
    ".DS_Store",
    "*.pyc",
    "*.pyo",
    "*.swp",
    "*.swo",
    "*~",
    ".#*",
)


class WatchError(Invalid):
    """A watch request that cannot be served; nothing was started."""


class WatchNotFound(NotFound, WatchError): ...


class WatchLimit(LimitReached, WatchError): ...


class WatchTimeout(Expired, WatchError):
    """``wait`` saw no event in its time: the awaited condition, not the operation, timed out."""


@dataclass(frozen=True)
class WatchEvent:
    """One change; the attributes are the path's as it was looked at (``lstat``) when the batch
    arrived: ``None`` for a removed path or one already gone again."""

    seq: int
    type: str
    path: str
    time: float
    relative_path: str = ""
    is_dir: bool = False
    mtime: float | None = None
    size: int | None = None
    inode: int | None = None
    old_path: str | None = None


@dataclass(frozen=True)
class WatchPage:
    """What a poll read: ``events`` after the cursor, the ``cursor`` to pass next (the last event's
    ``seq``, or the cursor given), ``overflow`` when events after the given cursor were dropped from
    the ring before this read, ``stopped`` when the watcher has ended (no event will follow)."""

    events: list[WatchEvent]
    cursor: int
    overflow: bool
    stopped: bool


@dataclass(frozen=True)
class Subscription:
    """A subscriber's hold on a shared watcher: ``reused`` when another subscriber started it;
    ``initial_cursor`` is "from now on" (the last ``seq`` so far)."""

    watcher: Watcher
    reused: bool
    initial_cursor: int


@dataclass(frozen=True)
class WatchOptions:
    path: str
    recursive: bool = True
    exclude: tuple[str, ...] = ()
    include_patterns: tuple[str, ...] = ()
    debounce_ms: int = 50

    def relative(self, path: str) -> str:
        inside = path == self.path or path.startswith(self.path.rstrip("/") + "/")
        return os.path.relpath(path, self.path) if inside else path

    def accepts(self, path: str) -> bool:
        """``exclude`` matches any one component below the root (or the relative path);
        ``include_patterns`` the name or the relative path."""
        relative = self.relative(path)
        parts = Path(relative).parts
        if any(fnmatch.fnmatch(part, p) for p in self.exclude for part in (*parts, relative)):
            return False
        if self.include_patterns:
            name = Path(path).name
            return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in self.include_patterns)
        return True


@dataclass(eq=False)
class Watcher:
    id: str
    options: WatchOptions
    events_kept: int = EVENTS_KEPT
    #: Reusable by a subscription with the same options (``/v2``); ``/v1``'s watchers are not.
    shared: bool = False
    subscribers: int = 1
    created_at: float = field(default_factory=time.time)
    events: collections.deque[WatchEvent] = field(init=False)
    last_seq: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.events = collections.deque(maxlen=self.events_kept)

    @property
    def ended(self) -> bool:
        return self.stop.is_set() or (self.task is not None and self.task.done())

    def page(self, cursor: int, limit: int) -> WatchPage:
        """The ring holds consecutive ``seq`` numbers, so the events after ``cursor`` start at a known index."""
        first = self.last_seq - len(self.events) + 1
        start = max(0, cursor - first + 1)
        events = list(itertools.islice(self.events, start, start + limit))
        return WatchPage(events, events[-1].seq if events else cursor, cursor < first - 1, self.ended)


class FileWatchPlane:
    def __init__(self, max_watchers: int = MAX_WATCHERS, events_kept: int = EVENTS_KEPT) -> None:
        self.max_watchers = max_watchers
        self.events_kept = events_kept
        self._watchers: dict[str, Watcher] = {}

    def _check_room(self) -> None:
        if len(self._watchers) >= self.max_watchers:
            raise WatchLimit(f"watcher limit reached: {self.max_watchers} watchers are running; stop one first")

    async def create(self, options: WatchOptions) -> Watcher:
        """A watcher of its own (``/v1``): never reused, stopped by its one ``stop``."""
        root = await asyncio.to_thread(_existing_directory, options.path)
        return await self._start(replace(options, path=root), shared=False)

    async def subscribe(self, options: WatchOptions) -> Subscription:
        """The running shared watcher with the same options (one more subscriber; it does not count
        against the limit), else a new one."""
        options = replace(options, path=await asyncio.to_thread(_existing_directory, options.path))
        for watcher in self._watchers.values():  # no await from here to the registration: no race
            if watcher.shared and watcher.options == options and not watcher.ended:
                watcher.subscribers += 1
                return Subscription(watcher, reused=True, initial_cursor=watcher.last_seq)
        watcher = await self._start(options, shared=True)
        return Subscription(watcher, reused=False, initial_cursor=watcher.last_seq)

    async def _start(self, options: WatchOptions, *, shared: bool) -> Watcher:
        self._check_room()
        watcher = Watcher(secrets.token_hex(8), options, self.events_kept, shared=shared)
        self._watchers[watcher.id] = watcher
        watcher.task = asyncio.create_task(self._run(watcher), name=f"file-watch-{watcher.id}")
        await _until_watching()
        return watcher

    async def _run(self, watcher: Watcher) -> None:
        options = watcher.options
        try:
            async for changes in awatch(
                options.path,
                recursive=options.recursive,
                debounce=options.debounce_ms,
                step=min(50, options.debounce_ms) or 1,
                stop_event=watcher.stop,
                watch_filter=None,  # filtered below, after new directories are looked into
                ignore_permission_denied=True,
            ):
                found = sorted(((_KINDS[c], p) for c, p in changes), key=lambda item: (item[1], _ORDER[item[0]]))
                described = await asyncio.to_thread(_described, found, options)
                if not described:
                    continue
                async with watcher.changed:
                    for event in described:
                        watcher.last_seq += 1
                        watcher.events.append(replace(event, seq=watcher.last_seq))
                    watcher.changed.notify_all()
        except Exception:  # the directory went away, inotify ran out...: the watcher just ends
            logger.warning("file watcher %s on %s ended", watcher.id, options.path, exc_info=True)
        finally:  # a poll waiting on it returns now, saying ``stopped``
            async with watcher.changed:
                watcher.changed.notify_all()

    def list(self) -> list[Watcher]:
        return list(self._watchers.values())

    def get(self, watcher_id: str) -> Watcher:
        watcher = self._watchers.get(watcher_id)
        if watcher is None:
            raise WatchNotFound(f"no file watcher {watcher_id!r}")
        return watcher

    async def poll(self, watcher_id: str, since: int = 0, limit: int = 1000, wait_s: float = 0) -> WatchPage:
        """Events after cursor ``since`` (at most ``limit``); with ``wait_s``, wait that long for one.
        A cursor past the last event is refused: it is not one this watcher handed out."""
        watcher = self.get(watcher_id)
        if since > watcher.last_seq:
            raise WatchError(f"cursor {since} is past watcher {watcher_id}'s last event ({watcher.last_seq})")
        async with watcher.changed:
            if wait_s > 0 and watcher.last_seq <= since:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait_s):
                        await watcher.changed.wait_for(lambda: watcher.last_seq > since or watcher.ended)
            return watcher.page(since, limit)

    async def stop(self, watcher_id: str) -> int:
        """Release one subscriber; the last one stops the watcher. Returns the subscribers left."""
        watcher = self.get(watcher_id)
        watcher.subscribers -= 1
        if watcher.subscribers > 0:
            return watcher.subscribers
        del self._watchers[watcher_id]
        await _halt(watcher)
        return 0

    async def wait(self, path: str, within: float, event_types: Sequence[str] = ()) -> WatchEvent:
        """The first event on exactly ``path`` (of ``event_types``, else any) within ``within`` s."""
        target = path
        if not os.path.isabs(target):
            raise WatchError(f"path must be absolute: {path}")
        unknown = set(event_types) - EVENT_TYPES
        if unknown:
            raise WatchError(f"unknown event types {sorted(unknown)}: use {', '.join(sorted(EVENT_TYPES))}")
        wanted = set(event_types) or EVENT_TYPES
        if {"rename"} & wanted:  # a rename is seen as the name's removal or creation
            wanted |= {"create", "remove"}
        if {"chmod"} & wanted:
            wanted |= {"write"}
        watcher = await self.create(WatchOptions(os.path.dirname(target), recursive=False, debounce_ms=10))
        exact = os.path.join(watcher.options.path, os.path.basename(target))
        try:
            seen = 0
            async with asyncio.timeout(within):
                while True:
                    for event in (await self.poll(watcher.id, seen, wait_s=within)).events:
                        seen = event.seq
                        if event.path == exact and event.type in wanted:
                            return event
        except TimeoutError:
            raise WatchTimeout(f"no event on {path} within {within:g} s") from None
        finally:
            with contextlib.suppress(WatchNotFound):
                await self.stop(watcher.id)

    async def aclose(self) -> None:
        watchers, self._watchers = list(self._watchers.values()), {}
        await asyncio.gather(*(_halt(w) for w in watchers))


def _described(found: list[tuple[str, str]], options: WatchOptions) -> list[WatchEvent]:
    """One batch's changes (and what new directories already hold) that ``options`` accepts, each
    with the path's attributes; ``seq`` is set when they join the ring."""
    if options.recursive:
        found = found + _inside_new_directories(found, options)
    now = time.time()
    events = []
    for kind, path in found:
        if not options.accepts(path):
            continue
        event = WatchEvent(0, kind, path, now, relative_path=options.relative(path))
        if kind != "remove":
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                event = replace(
                    event, is_dir=stat.S_ISDIR(info.st_mode), mtime=info.st_mtime, size=info.st_size, inode=info.st_ino
                )
        events.append(event)
    return events


def _inside_new_directories(found: list[tuple[str, str]], options: WatchOptions) -> list[tuple[str, str]]:
    """What a directory created just now already holds: inotify watches a new directory only once it
    has seen it, so files made in it before that (``mkdir -p a/b && touch a/b/c``) would be missed."""
    reported = {path for _, path in found}
    extra: list[tuple[str, str]] = []
    for kind, path in found:
        if kind != "create" or not os.path.isdir(path):
            continue
        for folder, directories, files in os.walk(path):
            for name in sorted(directories) + sorted(files):
                inner = os.path.join(folder, name)
                if inner not in reported and len(extra) < NEW_DIRECTORY_SCAN_LIMIT:
                    reported.add(inner)
                    extra.append(("create", inner))
    return extra


def _existing_directory(path: str) -> str:
    root = Path(path).expanduser()
    if not root.is_absolute():
        raise WatchError(f"path must be absolute: {path}")
    if not root.is_dir():
        raise WatchNotFound(f"no such directory: {path}")
    return str(root.resolve())


async def _halt(watcher: Watcher) -> None:
    watcher.stop.set()
    async with watcher.changed:
        watcher.changed.notify_all()
    if watcher.task is not None:
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            async with asyncio.timeout(5):
                await watcher.task


async def _until_watching() -> None:
    """``awatch`` sets its inotify watches when first iterated, before its first await: letting the
    new task run to that point means a change made after ``create`` returns is seen."""
    for _ in range(3):
        await asyncio.sleep(0)
