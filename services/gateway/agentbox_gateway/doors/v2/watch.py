"""``/v2/watch``, AIO's watchers with cursors: ``POST`` creates (or, with the same options, reuses)
a watcher, ``GET`` lists them, ``GET /{id}/poll?cursor&limit&timeout`` long-polls the events after
a cursor (``overflow`` when some were dropped before they were read), ``GET /{id}/events`` streams
them as SSE (``id: <watcher_id>:<seq>``, so a reconnect resumes from ``Last-Event-ID``), and
``DELETE /{id}`` releases one subscriber. The file watch plane does the watching; this door checks
AIO's bounds (400 outside them, as AIO answers) and shapes the answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Header, Query
from pydantic import ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ...planes.files import DEFAULT_EXCLUDE, FileWatchPlane, Watcher, WatchEvent, WatchNotFound, WatchOptions, WatchPage
from ..rest.bodies import ABSOLUTE_PATH, StrictBody, documented
from ..rest.envelope import RestError, error_responses, ok
from ..rest.file_watch import watcher_object
from ..rest.shell_stream import KEEPALIVE, wants_events

if TYPE_CHECKING:
    from ...planes import Planes

#: AIO's bounds and defaults: debounce (ms), events per poll, seconds a poll may wait.
DEBOUNCE_MS = (50, 5000, 300)
LIMIT = (1, 1000, 100)
TIMEOUT_S = (0, 60, 0)


class WatchCreate(StrictBody):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        min_length=1, description="absolute directory to watch", json_schema_extra=documented(ABSOLUTE_PATH)
    )
    recursive: bool = Field(True, description="watch the whole subtree")
    debounce: int = Field(DEBOUNCE_MS[2], description="milliseconds changes are coalesced over (50-5000)")
    exclude: list[str] | None = Field(
        None, description="globs matched against each path component; replaces the default list (.git, ...)"
    )
    include_patterns: list[str] = Field([], description="globs; report only paths that match (none: all)")


def _bounded(name: str, value: float, bounds: tuple[int, int, int]) -> None:
    low, high, _ = bounds
    if not low <= value <= high:
        raise RestError(400, f"{name} must be between {low} and {high}, got {value:g}")


def _event(event: WatchEvent) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "type": event.type,
        "path": event.path,
        "relative_path": event.relative_path,
        "is_dir": event.is_dir,
        "timestamp": event.time,
        "old_path": event.old_path,
        "mtime": event.mtime,
        "size": event.size,
        "inode": event.inode,
    }


def _watcher(watcher: Watcher) -> dict[str, Any]:
    """``/v1/file/watch``'s object, with its subscribers, and ended once it is told to stop."""
    return {**watcher_object(watcher), "subscribers": watcher.subscribers, "active": not watcher.ended}


def _page(watcher_id: str, page: WatchPage) -> dict[str, Any]:
    return {
        "watcher_id": watcher_id,
        "events": [_event(e) for e in page.events],
        "cursor": page.cursor,
        "overflow": page.overflow,
        "stopped": page.stopped,
    }


def _resume_cursor(watcher_id: str, last_event_id: str | None, cursor: int) -> int:
    """``Last-Event-ID`` (``<watcher_id>:<seq>``, or a bare ``seq``) wins over ``cursor``: an
    ``EventSource`` reconnects to the URL it first opened, with the header added."""
    if last_event_id is None:
        return cursor
    owner, _, seq = last_event_id.strip().rpartition(":")
    if owner not in ("", watcher_id) or not seq.isdigit():
        raise RestError(400, f"Last-Event-ID {last_event_id!r} is not an event of watcher {watcher_id}")
    return int(seq)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _stream(
    watches: FileWatchPlane, watcher_id: str, cursor: int, page: WatchPage
) -> AsyncIterator[ServerSentEvent]:
    """``page`` (read before the answer started, so a bad cursor was a 400), then every later event."""
    yield ServerSentEvent(_json({"watcher_id": watcher_id, "cursor": cursor}), event="watch_started")
    while True:
        if page.overflow:
            oldest = page.events[0].seq if page.events else cursor + 1
            yield ServerSentEvent(
                _json({"watcher_id": watcher_id, "cursor": cursor, "oldest_seq": oldest}), event="overflow"
            )
        for event in page.events:
            yield ServerSentEvent(_json(_event(event)), id=f"{watcher_id}:{event.seq}", event="file_change")
        cursor = page.cursor
        if page.stopped and not page.events:
            break
        try:
            page = await watches.poll(watcher_id, cursor, LIMIT[1], wait_s=KEEPALIVE)
        except WatchNotFound:  # deleted between two reads
            break
    yield ServerSentEvent(_json({"watcher_id": watcher_id, "cursor": cursor}), event="watch_stopped")


def router(planes: Planes) -> APIRouter:
    watches = planes.watch
    api = APIRouter(prefix="/v2/watch", tags=["watch"], responses=error_responses(400, 404, 429))

    async def stream_from(watcher_id: str, cursor: int) -> EventSourceResponse:
        first = await watches.poll(watcher_id, cursor, LIMIT[1])
        return EventSourceResponse(_stream(watches, watcher_id, cursor, first), ping=KEEPALIVE)

    @api.post("")
    async def create(body: WatchCreate) -> dict[str, Any]:
        """Watch a directory; the same options again reuse the running watcher (``reused: true``, one
        more subscriber). ``initial_cursor`` means "from now on"; at most 128 watchers (429)."""
        _bounded("debounce", body.debounce, DEBOUNCE_MS)
        options = WatchOptions(
            body.path,
            recursive=body.recursive,
            exclude=tuple(DEFAULT_EXCLUDE if body.exclude is None else body.exclude),
            include_patterns=tuple(body.include_patterns),
            debounce_ms=body.debounce,
        )
        subscription = await watches.subscribe(options)
        return ok(
            {
                **_watcher(subscription.watcher),
                "initial_cursor": subscription.initial_cursor,
                "reused": subscription.reused,
            }
        )

    @api.get("")
    async def list_watchers() -> dict[str, Any]:
        watchers = watches.list()
        return ok(
            {"watchers": [_watcher(w) for w in watchers], "count": len(watchers), "max_watchers": watches.max_watchers}
        )

    @api.get("/{watcher_id}/poll", response_model=None)
    async def poll(
        watcher_id: str,
        cursor: int = Query(0, ge=0, description="the last seq consumed (0: the buffered history)"),
        limit: int = Query(LIMIT[2], description="events returned at most (1-1000)"),
        wait: float = Query(TIMEOUT_S[2], alias="timeout", description="seconds to wait for the first event (0-60)"),
        accept: str = Header(""),
    ) -> dict[str, Any] | EventSourceResponse:
        """Events after ``cursor``; with ``timeout``, waits that long for one. ``Accept:
        text/event-stream`` asks for the event stream from ``cursor`` instead."""
        _bounded("limit", limit, LIMIT)
        _bounded("timeout", wait, TIMEOUT_S)
        if wants_events(accept):
            return await stream_from(watcher_id, cursor)
        return ok(_page(watcher_id, await watches.poll(watcher_id, cursor, limit, wait_s=wait)))

    @api.get("/{watcher_id}/events", response_model=None)
    async def events(
        watcher_id: str,
        cursor: int = Query(0, ge=0, description="stream the events after this seq (0: the buffered history)"),
        last_event_id: str | None = Header(None, description="<watcher_id>:<seq> of the last event received"),
    ) -> EventSourceResponse:
        """Server-Sent Events: ``watch_started``, one ``file_change`` per event (``id:
        <watcher_id>:<seq>``), ``overflow`` when events were dropped before they were sent, and
        ``watch_stopped`` when the watcher ends."""
        return await stream_from(watcher_id, _resume_cursor(watcher_id, last_event_id, cursor))

    @api.delete("/{watcher_id}")
    async def release(watcher_id: str) -> dict[str, Any]:
        """Release one subscriber; the last one stops the watcher (``stopped: true``)."""
        left = await watches.stop(watcher_id)
        return ok({"watcher_id": watcher_id, "stopped": left == 0, "subscribers": left})

    return api
