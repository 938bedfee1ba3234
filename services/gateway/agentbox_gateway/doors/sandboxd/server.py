"""sandboxd's two listeners, run in the gateway's lifespan when ``SANDBOXD_ENABLED`` is on.

A door of the gateway rather than a program of its own: its processes are the shell plane's (the
same user, environment and running-commands limit as ``/mcp`` and ``/v2/commands``), its files go
through the same walk as MCP mode's, and no second Python process is paid for in memory. The REST
API is a second uvicorn server in this event loop; the ProcessService a ``grpc.aio`` server."""

from __future__ import annotations

import contextlib
import os
import socket
from collections import Counter
from collections.abc import AsyncIterator, Generator

import anyio
import anyio.to_thread
import grpc
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbox_common.serving import server as uvicorn_server
from agentbox_common.settings import ConfigError
from agentbox_common.workspace_files import WorkspaceFiles

from ...planes import Planes
from ...planes.context.metadata import runtime_metadata
from ...settings import GatewaySettings
from . import FORK_SUPPORT_SET, process_pb2_grpc
from .files import FilesDoor, files_app
from .guard import GrpcKeyGuard, RestGuard
from .process import ProcessService

#: The largest gRPC message taken (a ``WriteStdin`` chunk); answers are not bounded by it.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class Sandboxd:
    """The running listeners' addresses and counts, for ``/metrics`` and the tests."""

    def __init__(self) -> None:
        self.grpc_port = 0
        self.rest_port = 0
        #: Calls answered, by (``grpc`` or ``rest``, method, status code).
        self.calls: Counter[tuple[str, str, str]] = Counter()


class _Embedded(uvicorn.Server):
    """A uvicorn server inside another's event loop: the gateway's own server handles the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class _CountCalls:
    def __init__(self, app: ASGIApp, calls: Counter[tuple[str, str, str]]) -> None:
        self.app = app
        self.calls = calls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.calls["rest", scope["method"], str(message["status"])] += 1
            await send(message)

        await self.app(scope, receive, counting)


def _listen(host: str, port: int) -> socket.socket:
    """The REST listener, bound here so a taken port is an error of ours, not uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(2048)
    except OSError:
        listener.close()
        raise
    return listener


@contextlib.asynccontextmanager
async def serving(planes: Planes, settings: GatewaySettings, state: Sandboxd) -> AsyncIterator[None]:
    """Both listeners up before the gateway serves, both closed after it (``/v1/health`` says 503
    from the start of the shutdown). A port that cannot be bound stops the gateway's start."""
    root = settings.sandboxd_root
    try:
        await anyio.to_thread.run_sync(lambda: root.mkdir(parents=True, exist_ok=True))
    except OSError as exc:
        raise ConfigError(f"SANDBOXD_ROOT_DIR: cannot create {root}: {exc.strerror or exc}") from None
    files = WorkspaceFiles(root)
    interceptors = [GrpcKeyGuard(settings.api_key, state.calls)] if settings.api_key else []
    grpc_server = grpc.aio.server(
        interceptors=interceptors,
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.so_reuseport", 0)],
    )
    service = ProcessService(planes.shell.programs, files, state.calls)
    process_pb2_grpc.add_ProcessServiceServicer_to_server(service, grpc_server)  # type: ignore[no-untyped-call]
    address = f"{settings.sandboxd_host}:{settings.sandboxd_grpc_port}"
    try:
        state.grpc_port = grpc_server.add_insecure_port(address)
    except RuntimeError as exc:
        raise ConfigError(f"SANDBOXD_GRPC_PORT: cannot listen on {address}: {exc}") from None
    await grpc_server.start()
    if FORK_SUPPORT_SET:
        os.environ.pop("GRPC_ENABLE_FORK_SUPPORT", None)
    door = FilesDoor(
        files,
        max_upload_bytes=settings.max_upload_bytes,
        metadata=lambda: runtime_metadata(settings.sandboxd_metadata_prefix),
    )
    app = RestGuard(
        _CountCalls(files_app(door), state.calls),
        api_key=settings.api_key,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )
    try:
        listener = _listen(settings.sandboxd_host, settings.sandboxd_rest_port)
    except OSError as exc:
        await grpc_server.stop(grace=None)
        where = f"{settings.sandboxd_host}:{settings.sandboxd_rest_port}"
        raise ConfigError(f"SANDBOXD_REST_PORT: cannot listen on {where}: {exc.strerror or exc}") from None
    state.rest_port = listener.getsockname()[1]
    rest = _Embedded(uvicorn_server(app, settings.sandboxd_host, state.rest_port).config)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: rest.serve(sockets=[listener]))
            try:
                yield
            finally:
                door.ready = False
                rest.should_exit = True
    finally:
        await grpc_server.stop(grace=2)
