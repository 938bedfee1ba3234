"""File watchers: inotify through ``watchfiles``, for ``/v1/file/watch*`` (and any door that wants
them). A watcher numbers its events (``seq``), keeps the latest ones, and answers "what happened
since cursor N", optionally waiting for the next one; ``wait`` watches one path until one event.
The number of watchers is bounded (AIO's 128): past it, :class:`WatchLimit`."""

from __future__ import annotations

import asyncio
import builtins
import collections
import contextlib
import fnmatch
import itertools
import logging
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from watchfiles import Change, awatch

from agentbox_common.errors import Invalid, LimitReached, NotFound, TimedOut

logger = logging.getLogger(__name__)

MAX_WATCHERS = 128
#: Events a watcher keeps; older ones are dropped (a cursor before them reads from the oldest kept).
EVENTS_KEPT = 10_000
MAX_WAIT_SECONDS = 300
#: The most entries reported from inside one batch's newly created directories.
NEW_DIRECTORY_SCAN_LIMIT = 1000

_KINDS = {Change.added: "create", Change.modified: "write", Change.deleted: "remove"}
EVENT_TYPES = frozenset({"create", "write", "remove", "rename", "chmod"})


class WatchError(Invalid):
    """A watch request that cannot be served; nothing was started."""


class WatchNotFound(NotFound, WatchError): ...


class WatchLimit(LimitReached, WatchError): ...


class WatchTimeout(TimedOut, WatchError):
    """``wait`` saw no event in its time: the awaited condition, not the operation, timed out."""


@dataclass(frozen=True)
class WatchEvent:
    seq: int
    type: str
    path: str
    time: float


@dataclass(frozen=True)
class WatchOptions:
    path: str
    recursive: bool = True
    exclude: tuple[str, ...] = ()
    include_patterns: tuple[str, ...] = ()
    debounce_ms: int = 50

    def accepts(self, path: str) -> bool:
        relative = str(Path(path).relative_to(self.path)) if path.startswith(self.path) else path
        name = Path(path).name
        parts = Path(relative).parts
        if any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) or p in parts for p in self.exclude):
            return False
        if self.include_patterns:
            return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in self.include_patterns)
        return True


@dataclass(eq=False)
class Watcher:
    id: str
    options: WatchOptions
    created_at: float = field(default_factory=time.time)
    events: collections.deque[WatchEvent] = field(default_factory=lambda: collections.deque(maxlen=EVENTS_KEPT))
    last_seq: int = 0
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def since(self, cursor: int, limit: int) -> list[WatchEvent]:
        return list(itertools.islice((e for e in self.events if e.seq > cursor), limit))


class FileWatchPlane:
    def __init__(self, max_watchers: int = MAX_WATCHERS) -> None:
        self.max_watchers = max_watchers
        self._watchers: dict[str, Watcher] = {}

    def _check_room(self) -> None:
        if len(self._watchers) >= self.max_watchers:
            raise WatchLimit(f"watcher limit reached: {self.max_watchers} watchers are running; stop one first")

    async def create(self, options: WatchOptions) -> Watcher:
        root = await asyncio.to_thread(_existing_directory, options.path)
        self._check_room()
        watcher = Watcher(secrets.token_hex(8), replace(options, path=root))
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
                found = [(_KINDS[change], path) for change, path in sorted(changes, key=lambda item: item[1])]
                if options.recursive:
                    found += await asyncio.to_thread(_inside_new_directories, found, options)
                found = [(kind, path) for kind, path in found if options.accepts(path)]
                if not found:
                    continue
                async with watcher.changed:
                    for kind, path in found:
                        watcher.last_seq += 1
                        watcher.events.append(WatchEvent(watcher.last_seq, kind, path, time.time()))
                    watcher.changed.notify_all()
        except Exception:  # the directory went away, inotify ran out...: the watcher just ends
            logger.warning("file watcher %s on %s ended", watcher.id, options.path, exc_info=True)

    def list(self) -> list[Watcher]:
        return list(self._watchers.values())

    def get(self, watcher_id: str) -> Watcher:
        watcher = self._watchers.get(watcher_id)
        if watcher is None:
            raise WatchNotFound(f"no file watcher {watcher_id!r}")
        return watcher

    async def poll(
        self, watcher_id: str, since: int = 0, limit: int = 1000, wait_s: float = 0
    ) -> builtins.list[WatchEvent]:
        """Events after cursor ``since`` (at most ``limit``); with ``wait_s``, wait that long for one."""
        watcher = self.get(watcher_id)
        async with watcher.changed:
            if wait_s > 0 and watcher.last_seq <= since:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait_s):
                        await watcher.changed.wait_for(lambda: watcher.last_seq > since or watcher.stop.is_set())
            return watcher.since(since, limit)

    async def stop(self, watcher_id: str) -> Watcher:
        watcher = self._watchers.pop(watcher_id, None)
        if watcher is None:
            raise WatchNotFound(f"no file watcher {watcher_id!r}")
        await _halt(watcher)
        return watcher

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
                    for event in await self.poll(watcher.id, seen, wait_s=within):
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
