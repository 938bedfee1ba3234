"""sandboxd's ProcessService over gRPC: each RPC parses its message, asks the shell plane's
:class:`~agentbox_gateway.planes.shell.programs.Programs` and shapes the answer. A working directory
is resolved under the root by the same walk as the filesystem API (an escape is
``PERMISSION_DENIED``). A ``Start`` stream or an ``Execute`` whose caller goes away (cancelled, past
its deadline) kills what it started, as sandboxd does."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from agentbox_common.errors import PlaneError
from agentbox_common.workspace_files import WorkspaceFiles, under_root

from ...planes.shell.errors import InvalidRequest
from ...planes.shell.programs import Exited, ProgramRequest, Programs
from . import process_pb2 as pb
from .errors import grpc_status

T = TypeVar("T")

_SIGNALS = {
    pb.SIGNAL_SIGINT: signal.SIGINT,
    pb.SIGNAL_SIGTERM: signal.SIGTERM,
    pb.SIGNAL_SIGKILL: signal.SIGKILL,
}


class ProcessService:
    """The servicer of ``process.v1.ProcessService`` (method names are the service's)."""

    def __init__(self, programs: Programs, files: WorkspaceFiles, calls: Counter[tuple[str, str, str]]) -> None:
        self._programs = programs
        self._files = files
        #: RPCs answered, by ("grpc", method, final code): counted here, as an interceptor costs each call.
        self._calls = calls

    async def _program_request(self, config: pb.ProcessConfig, pty: pb.PTY | None) -> ProgramRequest:
        if not config.command:
            raise InvalidRequest("command is required")
        if config.HasField("cwd") and config.cwd:
            # A few metadata calls on a local file system: cheaper inline than a worker thread's hop.
            real = self._files.real_dir(under_root(self._files.root, config.cwd))
        else:
            real = str(self._files.root)
        terminal = (pty.cols, pty.rows) if pty is not None else None
        return ProgramRequest(tuple(config.command), real, dict(config.env_vars), terminal)

    async def _answer(
        self,
        context: grpc.aio.ServicerContext[Any, Any],
        method: str,
        call: Callable[[], Awaitable[T]],
        *,
        final: bool = True,
    ) -> T:
        """``call()``'s answer, or its plane error as the RPC's status; the call is counted when it
        ends here (``final``: a stream counts its end itself)."""
        code: str | None = "OK" if final else None
        try:
            return await call()
        except PlaneError as error:
            status, message = grpc_status(error)
            code = status.name
            await context.abort(status, message)
            raise AssertionError("abort raises") from None
        except asyncio.CancelledError:
            code = "CANCELLED"
            raise
        finally:
            if code is not None:
                self._calls["grpc", method, code] += 1

    async def Start(
        self, request: pb.StartRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.StartResponse]:
        pty = request.pty if request.HasField("pty") else None

        async def starting() -> Any:
            return await self._programs.start(await self._program_request(request.config, pty))

        program = await self._answer(context, "Start", starting, final=False)
        ended = False
        try:
            yield pb.StartResponse(init=pb.InitEvent(process_id=program.number))
            async for event in program.events():
                if isinstance(event, Exited):
                    ended = True
                    yield pb.StartResponse(exit=pb.ExitEvent(exit_code=event.exit_code))
                elif event.stderr:
                    yield pb.StartResponse(stderr=event.data)
                else:
                    yield pb.StartResponse(stdout=event.data)
        finally:
            program.abandon()  # the stream ended early: its caller is gone
            program.signal(signal.SIGKILL)
            self._calls["grpc", "Start", "OK" if ended else "CANCELLED"] += 1

    async def Execute(
        self, request: pb.ExecuteRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ExecuteResponse:
        async def executing() -> pb.ExecuteResponse:
            done = await self._programs.execute(await self._program_request(request.config, None))
            return pb.ExecuteResponse(exit_code=done.exit_code, stdout=done.stdout, stderr=done.stderr)

        return await self._answer(context, "Execute", executing)

    async def WriteStdin(
        self, request: pb.WriteStdinRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.WriteStdinResponse:
        async def writing() -> pb.WriteStdinResponse:
            program = self._programs.get(request.process_id)
            if request.HasField("eof"):
                await program.close_stdin()
            elif request.input:
                await program.write(request.input)
            return pb.WriteStdinResponse()

        return await self._answer(context, "WriteStdin", writing)

    async def SendSignal(
        self, request: pb.SendSignalRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SendSignalResponse:
        async def signalling() -> pb.SendSignalResponse:
            program = self._programs.get(request.process_id)
            sig = _SIGNALS.get(request.signal)
            if sig is None:
                raise InvalidRequest(f"unsupported or unspecified signal: {request.signal}")
            program.signal(sig)
            return pb.SendSignalResponse()

        return await self._answer(context, "SendSignal", signalling)

    async def ResizeTTY(
        self, request: pb.ResizeTTYRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ResizeTTYResponse:
        async def resizing() -> pb.ResizeTTYResponse:
            if request.cols > 0xFFFF or request.rows > 0xFFFF:
                raise InvalidRequest("terminal size out of range")
            self._programs.get(request.process_id).resize(request.cols, request.rows)
            return pb.ResizeTTYResponse()

        return await self._answer(context, "ResizeTTY", resizing)
