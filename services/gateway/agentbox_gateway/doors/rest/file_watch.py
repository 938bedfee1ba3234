"""REST door of the file watchers, as the agent-sandbox SDK's ``file.watch_*`` calls it:
``POST /v1/file/watch`` (start), ``GET /v1/file/watch`` (list), ``GET /v1/file/watch/{id}/events``
(every kept event), ``POST /v1/file/watch/{id}/poll`` (events after a cursor, optionally waiting),
``DELETE /v1/file/watch/{id}`` (stop), ``POST /v1/file/watch/wait`` (one event on one path).
Events are ``{seq, type (create/write/remove), path, time}``; ``cursor`` is the last ``seq`` seen.
Plane errors are answered by the REST door's one handler (404 unknown watcher or directory, 429 too
many watchers, 400 the rest); only ``wait``'s timeout is this door's own: 408, as AIO answers it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from pydantic import ConfigDict, Field

from ...planes.files import MAX_WAIT_SECONDS, Watcher, WatchEvent, WatchOptions
from .bodies import ABSOLUTE_PATH, StrictBody, documented
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


class WatchCreate(StrictBody):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        min_length=1, description="absolute directory to watch", json_schema_extra=documented(ABSOLUTE_PATH)
    )
    recursive: bool | None = None
    exclude: list[str] | None = Field(None, description="names or glob patterns to ignore")
    debounce: int | None = Field(None, ge=1, le=10_000, description="milliseconds")
    include_patterns: list[str] | None = Field(None, description="glob patterns; none: every file")


class WatchPoll(StrictBody):
    model_config = ConfigDict(extra="forbid")
    since: int | None = Field(None, ge=0, description="the cursor of the last poll")
    limit: int | None = Field(None, ge=1, le=10_000)
    timeout: int | None = Field(None, ge=0, le=MAX_WAIT_SECONDS, description="seconds to wait for an event")


class WatchWait(StrictBody):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        min_length=1, description="the exact file to wait on", json_schema_extra=documented(r"^/[^\x00]*$")
    )
    timeout: int | None = Field(None, ge=1, le=MAX_WAIT_SECONDS)
    event_types: list[Literal["create", "write", "remove", "rename", "chmod"]] | None = None


def watcher_object(watcher: Watcher) -> dict[str, Any]:
    options = watcher.options
    return {
        "watcher_id": watcher.id,
        "path": options.path,
        "recursive": options.recursive,
        "exclude": list(options.exclude),
        "include_patterns": list(options.include_patterns),
        "debounce": options.debounce_ms,
        "created_at": watcher.created_at,
        "event_count": watcher.last_seq,
        "active": watcher.task is not None and not watcher.task.done(),
    }


def _event(event: WatchEvent) -> dict[str, Any]:
    return {"seq": event.seq, "type": event.type, "path": event.path, "time": event.time}


def _events(events: list[WatchEvent], cursor: int) -> dict[str, Any]:
    return {"events": [_event(e) for e in events], "cursor": events[-1].seq if events else cursor}


def router(planes: Planes) -> APIRouter:
    watches = planes.watch
    api = APIRouter(prefix="/v1/file/watch", tags=["file"], responses=error_responses(400, 404, 429))

    @api.post("")
    async def create(body: WatchCreate) -> dict[str, Any]:
        """Start watching a directory (recursive by default); at most 128 watchers (429)."""
        options = WatchOptions(
            body.path,
            recursive=body.recursive is not False,
            exclude=tuple(body.exclude or ()),
            include_patterns=tuple(body.include_patterns or ()),
            debounce_ms=body.debounce or 50,
        )
        return ok(watcher_object(await watches.create(options)))

    @api.get("")
    async def list_watchers() -> dict[str, Any]:
        watchers = watches.list()
        return ok(
            {
                "watchers": [watcher_object(w) for w in watchers],
                "count": len(watchers),
                "max_watchers": watches.max_watchers,
            }
        )

    @api.post("/wait", responses=error_responses(408))
    async def wait(body: WatchWait) -> dict[str, Any]:
        """The first event on ``path`` (of ``event_types``) within ``timeout`` seconds (30); 408 if none."""
        event = await watches.wait(body.path, float(body.timeout or 30), body.event_types or ())
        return ok({"event": _event(event)})

    @api.get("/{watcher_id}/events")
    async def events(watcher_id: str) -> dict[str, Any]:
        """Every event the watcher keeps (the latest 10,000)."""
        watcher = watches.get(watcher_id)
        return ok({"watcher_id": watcher_id, **_events(list(watcher.events), 0)})

    @api.post("/{watcher_id}/poll")
    async def poll(watcher_id: str, body: WatchPoll | None = None) -> dict[str, Any]:
        """Events after ``since``; with ``timeout``, waits up to that many seconds for the next one."""
        body = body or WatchPoll()
        since = body.since or 0
        page = await watches.poll(watcher_id, since, body.limit or 1000, wait_s=float(body.timeout or 0))
        return ok({"watcher_id": watcher_id, **_events(page.events, since)})

    @api.delete("/{watcher_id}")
    async def stop(watcher_id: str) -> dict[str, Any]:
        left = await watches.stop(watcher_id)
        return ok({"watcher_id": watcher_id, "stopped": left == 0})

    return api
