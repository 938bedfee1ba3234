"""A minimal DevTools protocol client: one browser-level WebSocket, commands matched to replies by
id, flat sessions for pages. Talking to Chromium directly (no Playwright driver in between) keeps
GUI screenshots and input events one hop away from the browser."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from websockets.exceptions import ConnectionClosed

if TYPE_CHECKING:  # imported where used: the client loads with the first GUI call
    from websockets.asyncio.client import ClientConnection

from .errors import BrowserError, BrowserUnavailable

logger = logging.getLogger(__name__)

EventListener = Callable[[str, dict[str, Any], str | None], None]


class CdpError(BrowserError):
    """Chromium answered a command with a protocol error."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        super().__init__(f"{method}: {error.get('message', 'protocol error')}")
        self.code = error.get("code")


class CdpConnection:
    """One open WebSocket to ``/devtools/browser/<id>``; ``closed`` once Chromium goes away."""

    def __init__(self, ws: ClientConnection, on_event: EventListener | None = None) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self._on_event = on_event
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    @classmethod
    async def open(cls, ws_url: str, on_event: EventListener | None = None, within: float = 5.0) -> CdpConnection:
        from websockets.asyncio.client import connect

        try:
            ws = await connect(
                ws_url, max_size=None, compression=None, ping_interval=None, open_timeout=within, proxy=None
            )
        except Exception as exc:  # refused, reset, timed out, handshake rejected: all mean "not there"
            raise BrowserUnavailable(f"cannot open {ws_url}: {type(exc).__name__}: {exc}") from exc
        return cls(ws, on_event)

    @property
    def closed(self) -> bool:
        return self._reader.done()

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, session_id: str | None = None, within: float = 30.0
    ) -> dict[str, Any]:
        """Send one command and wait for its result; protocol errors raise :class:`CdpError`."""
        if self.closed:
            raise BrowserUnavailable("the connection to Chromium was lost")
        message_id = next(self._ids)
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[message_id] = (method, future)
        try:
            await self._ws.send(json.dumps(message))
            return await asyncio.wait_for(future, within)
        except ConnectionClosed as exc:
            raise BrowserUnavailable("the connection to Chromium was lost") from exc
        except TimeoutError as exc:
            raise BrowserError(f"{method} got no answer from Chromium within {within:g}s") from exc
        finally:
            self._pending.pop(message_id, None)

    async def call_all(
        self, commands: list[tuple[str, dict[str, Any]]], *, session_id: str | None = None, within: float = 30.0
    ) -> list[dict[str, Any]]:
        """Send commands back to back, in order, and then wait for all their answers: a sequence
        of input events without a round trip each (Chromium handles a session's commands in order)."""
        if self.closed:
            raise BrowserUnavailable("the connection to Chromium was lost")
        futures = []
        try:
            for method, params in commands:
                message_id = next(self._ids)
                message: dict[str, Any] = {"id": message_id, "method": method, "params": params}
                if session_id:
                    message["sessionId"] = session_id
                future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
                self._pending[message_id] = (method, future)
                futures.append((message_id, future))
                await self._ws.send(json.dumps(message))
            async with asyncio.timeout(within):
                return [await future for _, future in futures]
        except ConnectionClosed as exc:
            raise BrowserUnavailable("the connection to Chromium was lost") from exc
        except TimeoutError as exc:
            raise BrowserError(f"{len(commands)} commands got no answer from Chromium within {within:g}s") from exc
        finally:
            for message_id, future in futures:
                self._pending.pop(message_id, None)
                if future.done() and not future.cancelled():
                    future.exception()  # retrieved: a second failure in the batch is not "never retrieved"

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                message_id = message.get("id")
                if message_id is None:
                    if self._on_event is not None:
                        self._on_event(message.get("method", ""), message.get("params", {}), message.get("sessionId"))
                    continue
                method, future = self._pending.get(message_id, ("", None))
                if future is None or future.done():
                    continue
                if "error" in message:
                    future.set_exception(CdpError(method, message["error"]))
                else:
                    future.set_result(message.get("result", {}))
        except ConnectionClosed:
            pass
        except Exception:  # a reader that dies must still fail the waiting callers below
            logger.exception("CDP reader failed")
        finally:
            for _, future in self._pending.values():
                if not future.done():
                    future.set_exception(BrowserUnavailable("the connection to Chromium was lost"))

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._ws.close()
        with contextlib.suppress(BaseException):
            await self._reader
