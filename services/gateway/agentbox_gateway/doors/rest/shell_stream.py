"""``POST /v1/shell/exec`` with ``Accept: text/event-stream``: the command's output as SSE events
while it runs, then the answer the JSON request would have got.

Events: ``output`` (``{"session_id", "command_id", "output"}``, the new interleaved output, in
order) and one final ``result`` (the whole ``{"success", "message", "data", "hint"}`` envelope).
The stream reads the command's bounded output buffer; a reader slower than the command holds it
back as a pipe would (it misses nothing, and memory never grows with the output). A client that goes away ends only its
stream: the command keeps running in its session, as after the JSON request's ``timeout``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent

from ...planes.shell import CommandRecord

#: Seconds between SSE comments that keep idle proxies from closing a quiet stream.
KEEPALIVE = 15


def wants_events(accept: str) -> bool:
    return "text/event-stream" in accept.lower()


def exec_stream(
    record: CommandRecord, wait: float | None, answer: Callable[[str], dict[str, Any]]
) -> EventSourceResponse:
    """Stream ``record``'s output for up to ``wait`` seconds (``None``: to its end), then
    ``answer(outcome)`` (``"done"`` or ``"timeout"``) as the ``result`` event."""
    return EventSourceResponse(_events(record, wait, answer), ping=KEEPALIVE)


async def _events(
    record: CommandRecord, wait: float | None, answer: Callable[[str], dict[str, Any]]
) -> AsyncIterator[ServerSentEvent]:
    ids = {"session_id": record.session_id, "command_id": record.command_id}
    with anyio.move_on_after(wait):
        async for chunk in record.follow():
            yield ServerSentEvent(_json({**ids, "output": chunk}), event="output")
    yield ServerSentEvent(_json(answer("done" if record.done else "timeout")), event="result")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
