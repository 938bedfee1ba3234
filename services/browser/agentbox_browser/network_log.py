"""The requests of the shared browser context, as they happen: method, URL, headers, status, timing,
kept for the latest :data:`REQUEST_LIMIT` requests. The page plane lists them and exports them as HAR."""

from __future__ import annotations

import collections
import itertools
import time
from typing import Any

from playwright.async_api import BrowserContext, Request, Response

REQUEST_LIMIT = 2000


class NetworkLog:
    def __init__(self) -> None:
        self.entries: collections.deque[dict[str, Any]] = collections.deque(maxlen=REQUEST_LIMIT)
        self._open: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)

    def attach(self, context: BrowserContext) -> None:
        context.on("request", self._on_request)
        context.on("response", self._on_response)
        context.on("requestfinished", self._on_end)
        context.on("requestfailed", self._on_failed)

    def _on_request(self, request: Request) -> None:
        entry = {
            "id": next(self._ids),
            "url": request.url,
            "method": request.method,
            "resource_type": request.resource_type,
            "request_headers": dict(request.headers),
            "status": None,
            "status_text": "",
            "response_headers": {},
            "mime_type": "",
            "failure": None,
            "started": time.time(),
            "duration_ms": None,
        }
        self.entries.append(entry)
        self._open[id(request)] = entry
        if len(self._open) > REQUEST_LIMIT:  # requests that never ended (a tab closed mid-load)
            self._open.pop(next(iter(self._open)))

    def _on_response(self, response: Response) -> None:
        entry = self._open.get(id(response.request))
        if entry is not None:
            entry["status"], entry["status_text"] = response.status, response.status_text
            entry["response_headers"] = dict(response.headers)
            entry["mime_type"] = response.headers.get("content-type", "")

    def _finish(self, request: Request) -> dict[str, Any] | None:
        entry = self._open.pop(id(request), None)
        if entry is not None:
            entry["duration_ms"] = round((time.time() - entry["started"]) * 1000, 1)
        return entry

    def _on_end(self, request: Request) -> None:
        self._finish(request)

    def _on_failed(self, request: Request) -> None:
        entry = self._finish(request)
        if entry is not None:
            entry["failure"] = request.failure or "failed"
