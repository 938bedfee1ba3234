"""One interpreter process and the gateway's side of its protocol.

The worker (``python_driver.py`` / ``node_driver.py``) reads JSON requests on one pipe and answers on
another, so its stdin/stdout/stderr stay the user's. Its stdout and stderr are drained all the time
(a chatty program never blocks on a full pipe); bytes are kept only while a cell runs, up to a cap,
and a cell's output is complete once the end marker for its request id has come through both
streams. Everything here is asyncio: no call blocks the event loop, however long the code runs.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import logging
import os
import resource
import secrets
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentbox_common.processes import kill_process_group, pid_exists

from ..shell.bash import partial_marker

logger = logging.getLogger(__name__)

#: Bytes of stdout (and of stderr) kept per cell; the rest is counted and dropped.
OUTPUT_LIMIT = 2_000_000
#: How long a worker may take to start (seconds).
START_TIMEOUT = 30.0
#: After an answer, how long the end markers may lag behind on the output pipes (seconds).
MARKER_GRACE = 2.0
#: After a timeout, how long an interrupted session cell or a killed fork child may take to answer.
INTERRUPT_GRACE = 2.0
#: Control lines can carry a large ``execute_result``; the reader's line limit must exceed it.
CONTROL_LINE_LIMIT = 64 * 1024 * 1024


class WorkerStartError(Exception):
    """The interpreter could not be started (missing binary, crash during start-up)."""


class StreamCapture:
    """Collects one stream's bytes for one cell until its end marker, keeping at most ``limit``."""

    def __init__(
        self, marker: bytes | None, limit: int = OUTPUT_LIMIT, listener: Callable[[str], None] | None = None
    ) -> None:
        self._marker = marker
        self._limit = limit
        #: Sees the stream's text as it comes (before the cap), decoded as the final text is.
        self._listener = listener
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._kept = bytearray()
        self._tail = b""
        self.dropped = 0
        self.done = asyncio.Event()

    def feed(self, chunk: bytes) -> None:
        if self.done.is_set():
            return
        if self._marker is None:
            self._keep(chunk)
            return
        data = self._tail + chunk
        index = data.find(self._marker)
        if index >= 0:
            self._keep(data[:index], final=True)
            self._tail = b""
            self.done.set()
            return
        hold = partial_marker(data, self._marker)  # a marker may be split across two chunks
        self._keep(data[: len(data) - hold])
        self._tail = data[len(data) - hold :]

    def _keep(self, data: bytes, final: bool = False) -> None:
        if self._listener is not None and (data or final):
            self._listener(self._decoder.decode(data, final))
        room = self._limit - len(self._kept)
        self._kept += data[:room]
        self.dropped += max(len(data) - room, 0)

    def text(self) -> str:
        """What the cell wrote, decoded; a marker that never came leaves its held-back tail in."""
        self._keep(self._tail)
        self._tail = b""
        text = self._kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... {self.dropped} bytes of output omitted]\n"
        return text


@dataclass(frozen=True)
class Outcome:
    """What happened to one request, before the plane turns it into a result."""

    reply: dict[str, Any] | None  # the worker's answer; None when it was killed or died first
    stdout: str
    stderr: str
    timed_out: bool
    returncode: int | None  # the process's exit status when it is gone


class Worker:
    """A running interpreter in its own process group. ``mode`` is the driver's: ``fork`` (the Python
    fork server for stateless calls), ``once`` (single-use JavaScript) or ``inline`` (a session REPL,
    the same name for both drivers)."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol, mode: str, token: str) -> None:
        loop = asyncio.get_running_loop()
        self.process = asyncio.subprocess.Process(transport, protocol, loop)
        self.mode = mode
        self._transport = transport
        self._token = token
        self.info: dict[str, Any] = {}
        self._captures: tuple[StreamCapture, StreamCapture] | None = None
        self._reply: asyncio.Future[dict[str, Any]] | None = None
        self._ready: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._child_pid: int | None = None
        self._sequence = 0
        self._lock = asyncio.Lock()
        self._requests: asyncio.WriteTransport | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._exited = asyncio.create_task(protocol.exited.wait())
        self._killed = False
        self._closed = False

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        mode: str,
        *,
        env: Mapping[str, str],
        cwd: str,
        stdin_pipe: bool = False,
        memory_limit: int | None = None,
    ) -> Worker:
        """Start ``argv + [mode, IN, OUT, TOKEN]`` and wait for its ``ready`` message. ``memory_limit``
        (bytes) caps the data memory of the process and of everything it forks (``RLIMIT_DATA``)."""
        loop = asyncio.get_running_loop()
        token = secrets.token_hex(8)
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            transport, protocol = await loop.subprocess_exec(
                lambda: _Protocol(loop),
                *argv,
                mode,
                str(request_read),
                str(reply_write),
                token,
                stdin=asyncio.subprocess.PIPE if stdin_pipe else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(request_read, reply_write),
                env=dict(env),
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(request_write)
            os.close(reply_read)
            raise WorkerStartError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        finally:
            os.close(request_read)
            os.close(reply_write)
        worker = cls(transport, protocol, mode, token)
        try:
            if memory_limit:  # before the first request: the worker runs no code until then
                limit_memory(worker.process.pid, memory_limit)
            await worker._connect(request_write, reply_read)
            await worker._wait_ready(argv[0])
        except BaseException:  # cancelled or failed half-way: leave no process behind
            await asyncio.shield(worker.close())
            raise
        return worker

    @property
    def alive(self) -> bool:
        """asyncio learns of an exit a moment after the kernel has reaped the process, so a pid that
        no longer exists counts as gone already."""
        return self.process.returncode is None and not self._killed and pid_exists(self.process.pid)

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def _connect(self, request_write: int, reply_read: int) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=CONTROL_LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(reply_read, "rb", 0))
        self._requests, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(request_write, "wb", 0))
        startup_errors = StreamCapture(None, limit=4096)
        self._captures = (StreamCapture(None, limit=0), startup_errors)
        assert self.process.stdout is not None and self.process.stderr is not None
        self._tasks = [
            asyncio.create_task(self._read_control(reader)),
            asyncio.create_task(self._drain(self.process.stdout, 0)),
            asyncio.create_task(self._drain(self.process.stderr, 1)),
        ]

    async def _wait_ready(self, program: str) -> None:
        waiting: set[asyncio.Future[Any]] = {self._ready, self._exited}
        done, _ = await asyncio.wait(waiting, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        errors = self._captures[1].text().strip() if self._captures else ""
        self._captures = None
        if self._ready.done():
            self.info = self._ready.result()
            return
        await self.close()
        if self._exited in done:
            detail = f": {errors[-2000:]}" if errors else ""
            raise WorkerStartError(f"{program} exited with code {self.process.returncode} during start-up{detail}")
        raise WorkerStartError(f"{program} did not start within {START_TIMEOUT:.0f} s")

    async def _read_control(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await reader.readline()
            except (ValueError, asyncio.LimitOverrunError):
                logger.warning("interpreter %s sent an oversized control line", self.process.pid)
                continue
            if not line:
                return
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            event = message.get("event")
            if event == "ready" and not self._ready.done():
                self._ready.set_result(message)
            elif event == "started" and message.get("id") == self._sequence:
                self._child_pid = message.get("pid")
            elif event == "reply" and message.get("id") == self._sequence:
                if self._reply is not None and not self._reply.done():
                    self._reply.set_result(message)

    async def _drain(self, stream: asyncio.StreamReader, index: int) -> None:
        while chunk := await stream.read(65536):
            if self._captures is not None:
                self._captures[index].feed(chunk)

    async def run(
        self,
        request: Mapping[str, Any],
        budget: float,
        *,
        stdin: bytes | None = None,
        listener: Callable[[str], None] | None = None,
    ) -> Outcome:
        """Send one request and wait for its answer and output; past ``budget`` seconds stop the code: a fork
        child or a single-use worker is killed, a session cell is interrupted (SIGINT) and killed with
        its worker when it does not stop within a grace period. Cancelled, the worker is killed (a
        session then reports itself lost on its next call). ``listener`` sees stdout and stderr
        text as it is written."""
        async with self._lock:
            if not self.alive or self._requests is None:
                return Outcome(None, "", "", False, self.process.returncode)
            self._sequence += 1
            marker = f"\x00agentbox-end:{self._token}:{self._sequence}\x00".encode()
            stdout, stderr = StreamCapture(marker, listener=listener), StreamCapture(marker, listener=listener)
            self._captures = (stdout, stderr)
            self._reply = asyncio.get_running_loop().create_future()
            self._child_pid = None
            self._requests.write((json.dumps({**request, "id": self._sequence}) + "\n").encode())
            if stdin is not None:
                self._feed_stdin(stdin)
            try:
                reply = await self._wait_reply(budget)
            except asyncio.CancelledError:
                # The caller is gone (MCP cancellation, client disconnect): stop the code and all it
                # started at once, without awaiting (a cancelled scope would cut an await short).
                self.kill()
                raise
            timed_out = reply is _TIMED_OUT
            if timed_out:
                reply = await self._stop_overrun()
            if reply is not None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.gather(stdout.done.wait(), stderr.done.wait()), MARKER_GRACE)
            else:
                # the exit status, and whatever the dead process left in the pipes
                await asyncio.wait([self._exited, *self._tasks[1:]], timeout=0.5)
            self._captures = None
            self._child_pid = None  # reaped by now (or killed): never signal a pid that may be reused
            assert not isinstance(reply, _Sentinel)
            return Outcome(reply, stdout.text(), stderr.text(), timed_out, self.process.returncode)

    def _feed_stdin(self, data: bytes) -> None:
        """Hand the program its stdin and close it; not awaited, so code that never reads stdin
        cannot hold the call past its timeout (the transport keeps what the pipe cannot take)."""
        pipe = self.process.stdin
        if pipe is None:
            return
        with contextlib.suppress(ConnectionError):
            pipe.write(data)
            pipe.close()

    async def _wait_reply(self, within: float) -> dict[str, Any] | _Sentinel | None:
        assert self._reply is not None
        waiting: set[asyncio.Future[Any]] = {self._reply, self._exited}
        await asyncio.wait(waiting, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        if self._reply.done():
            return self._reply.result()
        if self._exited.done():  # the answer may still be in the pipe behind the exit
            try:
                return await asyncio.wait_for(asyncio.shield(self._reply), 0.5)
            except TimeoutError:
                return None
        return _TIMED_OUT

    async def _stop_overrun(self) -> dict[str, Any] | None:
        if self.mode == "fork" and self._child_pid:
            kill_process_group(self._child_pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._child_pid, signal.SIGKILL)
        elif self.mode == "inline":
            kill_process_group(self.process.pid, signal.SIGINT)
        else:
            self.kill()
            return None
        reply = await self._wait_reply(INTERRUPT_GRACE)
        if isinstance(reply, _Sentinel) or reply is None:
            self.kill()
            return None
        return reply

    def kill(self) -> None:
        """SIGKILL the worker's process group (and a fork child's, which has its own)."""
        if self._child_pid and self.mode == "fork":
            kill_process_group(self._child_pid)
        if self.process.returncode is None:
            kill_process_group(self.process.pid)
        self._killed = True

    async def close(self) -> None:
        """Kill the process group (idempotent) and stop reading from it."""
        if self._closed:
            return
        self._closed = True
        self.kill()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._exited), 5)
        await self._finish()

    async def retire(self, grace: float = 5.0) -> None:
        """Let a single-use worker end by itself (its background children live on, as after ``node
        -e``); kill its group only if it overstays ``grace``."""
        if self._closed:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._exited), grace)
        await self.close()

    async def _finish(self) -> None:
        if self._requests is not None:
            self._requests.close()
            self._requests = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self._transport.close()  # a background grandchild may hold the output pipes open forever
        self._exited.cancel()


def limit_memory(pid: int, limit: int) -> None:
    """Cap ``pid``'s data memory (heap and private mappings, what programs really allocate; unlike
    ``RLIMIT_AS`` it does not count the address space V8 reserves), never above the hard limit."""
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.prlimit(pid, resource.RLIMIT_DATA, (limit, limit))
    except ProcessLookupError:
        pass  # it died at once: the wait for its ready message reports why
    except OSError as exc:
        raise WorkerStartError(f"cannot limit the interpreter's memory: {exc.strerror or exc}") from None


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the process's exit as soon as it happens: ``Process.wait()`` also waits for the output
    pipes to close, which a background grandchild can delay forever."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=2**16, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _Sentinel:
    pass


_TIMED_OUT = _Sentinel()
