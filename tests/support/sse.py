"""Reading a server-sent-event answer with httpx streaming, event by event as it arrives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def sse_messages(response: httpx.Response) -> Iterator[tuple[str, str | None, Any]]:
    """``(event, id, data as JSON)`` of each message of an SSE answer, as an ``EventSource`` reads
    them (keep-alive comments skipped; ``id`` is None where the message names none)."""
    event = "message"
    event_id: str | None = None
    lines: list[str] = []
    for line in response.iter_lines():
        if not line:
            if lines:
                yield event, event_id, json.loads("\n".join(lines))
            event, event_id, lines = "message", None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "id":
            event_id = value
        elif name == "data":
            lines.append(value)


def sse_events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """``(event, data as JSON)`` pairs of an SSE answer (keep-alive comments skipped)."""
    for event, _, data in sse_messages(response):
        yield event, data
