"""Reading a server-sent-event answer with httpx streaming, event by event as it arrives."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def sse_events(response: httpx.Response) -> Iterator[tuple[str, Any]]:
    """``(event, data as JSON)`` pairs of an SSE answer (keep-alive comments skipped)."""
    name, data = "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
