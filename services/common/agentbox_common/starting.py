"""A program that answers its liveness probe while it is still importing itself.

The gateway's own import (the MCP SDK's generated models, FastAPI, the planes) is most of its start:
about 1 s of a cold container's 1.7 s to ``/health``. :class:`StartingApp` is what uvicorn serves
instead: it binds at once and answers ``GET /health`` with the program's liveness answer (the same
body the built app gives; liveness says the process is up, readiness is ``/ready``'s), while the
heavy imports run in a worker thread and the app is then built and its lifespan started. Only a
caller on a loopback name (a probe inside the container, a published port) gets that early answer,
as the app's host guard would let through in any configuration; every other request and WebSocket
waits for the app and is served by it, guards and all. From then on ``/health`` is the app's too.
Nothing but that one answer is given before the app exists.

A :class:`~agentbox_common.settings.ConfigError` from the build stops the server with the usual
refusal (exit status 2); an app whose lifespan fails to start stops it with uvicorn's own status
for that (3)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketClose

from .hosts import is_loopback_name, split_host
from .logging import redact
from .service import CONFIG_ERROR_STATUS, refusal
from .settings import ConfigError

logger = logging.getLogger("agentbox.starting")

#: uvicorn's exit status when the app's lifespan fails to start.
LIFESPAN_FAILED_STATUS = 3
#: A program whose build raised something other than a ConfigError (a bug): Python's own status.
BUILD_FAILED_STATUS = 1


def _from_loopback_name(scope: Scope) -> bool:
    """Whether the request names a loopback host (or none: not a browser's)."""
    host = dict(scope["headers"]).get(b"host")
    if host is None:
        return True
    parts = split_host(host.decode("latin-1"))
    return parts is not None and is_loopback_name(parts[0].strip("[]"))


class StartingApp:
    """Serves ``health()`` at ``health_path`` until ``build()`` (after ``preload()``, in a worker
    thread) has given the app and its lifespan has started; then is that app.

    ``stop(status)`` is called once if the program must end (the build refused its settings, the
    app's lifespan failed): it should make the server exit with ``status``."""

    def __init__(
        self,
        prog: str,
        *,
        preload: Callable[[], object],
        build: Callable[[], ASGIApp],
        health: Callable[[], Mapping[str, Any]],
        stop: Callable[[int], None],
        health_path: str = "/health",
    ) -> None:
        self._prog = prog
        self._preload = preload
        self._build = build
        self._health = health
        self._stop = stop
        self._health_path = health_path
        self._app: ASGIApp | None = None
        self._settled: anyio.Event | None = None
        self._to_app: MemoryObjectSendStream[Message] | None = None
        self._from_app: MemoryObjectReceiveStream[Message] | None = None

    @property
    def app(self) -> ASGIApp | None:
        """The built app, once its lifespan has started."""
        return self._app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if self._app is None and self._is_health(scope):
            await JSONResponse(dict(self._health()))(scope, receive, send)
            return
        if self._app is None and self._settled is not None:
            await self._settled.wait()
        if self._app is None:  # the build failed: the server is on its way out
            refusal: ASGIApp = (
                WebSocketClose(code=1013)
                if scope["type"] == "websocket"
                else PlainTextResponse(f"{self._prog} failed to start", status_code=503)
            )
            await refusal(scope, receive, send)
            return
        await self._app(scope, receive, send)

    def _is_health(self, scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and scope["method"] in ("GET", "HEAD")
            and scope["path"] == self._health_path
            and _from_loopback_name(scope)
        )

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup: bind now, start the app in the background
        self._settled = anyio.Event()
        await send({"type": "lifespan.startup.complete"})
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._start, scope.get("state", {}), tasks)
            await receive()  # lifespan.shutdown
            await self._shut_down()
            tasks.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})

    async def _start(self, state: dict[str, Any], tasks: TaskGroup) -> None:
        assert self._settled is not None
        try:
            app = await self._built()
            if app is None:
                return
            self._to_app, app_receives = anyio.create_memory_object_stream[Message](1)
            app_sends, self._from_app = anyio.create_memory_object_stream[Message](1)
            tasks.start_soon(self._run_lifespan, app, state, app_receives, app_sends)
            await self._to_app.send({"type": "lifespan.startup"})
            reply = await self._from_app.receive()
            if reply["type"] != "lifespan.startup.complete":
                logger.error("%s: the app failed to start: %s", self._prog, redact(str(reply.get("message", ""))))
                self._stop(LIFESPAN_FAILED_STATUS)
                return
            self._app = app
        except anyio.EndOfStream:  # the lifespan ended without a word: it failed
            logger.error("%s: the app's lifespan ended before it started", self._prog)
            self._stop(LIFESPAN_FAILED_STATUS)
        finally:
            self._settled.set()

    async def _built(self) -> ASGIApp | None:
        """The app, or ``None`` when the program must stop (already told to)."""
        try:
            await anyio.to_thread.run_sync(self._preload, abandon_on_cancel=True)
            return self._build()
        except ConfigError as exc:
            print(refusal(self._prog, exc), file=sys.stderr, flush=True)  # as before binding
            self._stop(CONFIG_ERROR_STATUS)
        except Exception:
            logger.exception("%s: building the app failed", self._prog)
            self._stop(BUILD_FAILED_STATUS)
        return None

    async def _run_lifespan(
        self,
        app: ASGIApp,
        state: dict[str, Any],
        receive: MemoryObjectReceiveStream[Message],
        send: MemoryObjectSendStream[Message],
    ) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": state}
        try:
            async with send:
                await app(scope, receive.receive, send.send)
        except Exception:
            # Starlette has already answered startup.failed (or shutdown.failed) with the cause.
            logger.debug("%s: the app's lifespan raised", self._prog, exc_info=True)

    async def _shut_down(self) -> None:
        if self._app is None or self._to_app is None or self._from_app is None:
            return
        await self._to_app.send({"type": "lifespan.shutdown"})
        try:
            reply = await self._from_app.receive()
        except anyio.EndOfStream:
            reply = {"type": "lifespan.shutdown.failed", "message": "the lifespan ended without a word"}
        if reply["type"] != "lifespan.shutdown.complete":
            logger.error("%s: the app failed to stop: %s", self._prog, redact(str(reply.get("message", ""))))
