"""Starting shells through the fork server (:mod:`.forkserver`): the gateway only makes three pipes
and sends a request, so a new bash costs its event loop a fraction of a millisecond instead of a
fork of the whole gateway.

The fork server is started on the first shell and lives until :meth:`Spawner.aclose`. Its shells are
its children, not the gateway's: it reports how each ends. Should it die, its shells are killed and
reported ended (their sessions start fresh ones), and the next shell starts a new fork server."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import os
import signal
import socket
from collections import deque
from pathlib import Path

from agentbox_common.processes import kill_process_group

from .errors import ShellUnavailable

_FORKSERVER = Path(__file__).with_name("forkserver.py")
#: The interpreter running the gateway, by a link that needs no path walk: ``sys.executable`` may
#: point through a directory the gateway's user cannot enter (a venv's link into root's home).
_PYTHON = "/proc/self/exe"
#: Requests sent and not yet answered, at most: fewer than the kernel queues on a socket of packets
#: (``net.unix.max_dgram_qlen``, 10 by default), so sending one never blocks the event loop.
IN_FLIGHT = 8


class _PipeProtocol(asyncio.Protocol):
    """One pipe of a shell, handed to its :class:`asyncio.SubprocessProtocol` as ``fd``."""

    def __init__(self, protocol: asyncio.SubprocessProtocol, fd: int) -> None:
        self._protocol = protocol
        self._fd = fd

    def data_received(self, data: bytes) -> None:
        self._protocol.pipe_data_received(self._fd, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._protocol.pipe_connection_lost(self._fd, exc)


class ShellProcess:
    """A shell the fork server started, with the part of :class:`asyncio.SubprocessTransport` a
    session uses. Its end reaches the protocol only once its pipes are connected, as asyncio's does."""

    def __init__(self, protocol: asyncio.SubprocessProtocol) -> None:
        self.pid = 0
        self.returncode: int | None = None
        self.ended = False
        self._protocol = protocol
        self._pipes: dict[int, asyncio.BaseTransport] = {}
        self._connected = False

    def get_pid(self) -> int:
        return self.pid

    def get_returncode(self) -> int | None:
        return self.returncode

    def get_pipe_transport(self, fd: int) -> asyncio.BaseTransport | None:
        return self._pipes.get(fd)

    def close(self) -> None:
        """Close the pipes (the shell itself is killed by its session)."""
        for pipe in self._pipes.values():
            pipe.close()

    async def connect(self, stdin: int, stdout: int, stderr: int) -> None:
        loop = asyncio.get_running_loop()
        write, _ = await loop.connect_write_pipe(lambda: _PipeProtocol(self._protocol, 0), io.FileIO(stdin, "w"))
        self._pipes[0] = write
        for fd, end in ((1, stdout), (2, stderr)):
            reader = functools.partial(_PipeProtocol, self._protocol, fd)
            read, _ = await loop.connect_read_pipe(reader, io.FileIO(end, "r"))
            self._pipes[fd] = read
        self._connected = True
        if self.ended:
            loop.call_soon(self._protocol.process_exited)

    def exited(self, returncode: int | None) -> None:
        self.returncode = returncode
        self.ended = True
        if self._connected:
            self._protocol.process_exited()


class Spawner:
    """The gateway's end of the fork server: requests in order, answers matched in order, and the
    ends of the shells it started."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = None
        self._server: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()
        self._slots = asyncio.Semaphore(IN_FLIGHT)
        self._waiting: deque[tuple[ShellProcess, asyncio.Future[None]]] = deque()
        self._running: dict[int, ShellProcess] = {}

    async def spawn(
        self, protocol: asyncio.SubprocessProtocol, argv: list[str], *, cwd: str, env: dict[str, str]
    ) -> ShellProcess:
        """Start ``argv`` in its own kernel session as a child subreaper, its stdin, stdout and
        stderr pipes connected to ``protocol``."""
        async with self._slots:
            return await self._spawn(protocol, argv, cwd, env)

    async def _spawn(
        self, protocol: asyncio.SubprocessProtocol, argv: list[str], cwd: str, env: dict[str, str]
    ) -> ShellProcess:
        sock = await self._connected()
        process = ShellProcess(protocol)
        request = json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode()
        stdin_child, stdin = os.pipe()
        stdout, stdout_child = os.pipe()
        stderr, stderr_child = os.pipe()
        answered = asyncio.get_running_loop().create_future()
        try:
            socket.send_fds(sock, [request], [stdin_child, stdout_child, stderr_child], socket.MSG_DONTWAIT)
            self._waiting.append((process, answered))
        except OSError as exc:
            for fd in (stdin, stdout, stderr):
                os.close(fd)
            raise ShellUnavailable(f"cannot start {argv[0]}: {exc}") from exc
        finally:
            for fd in (stdin_child, stdout_child, stderr_child):
                os.close(fd)
        try:
            await answered
        except BaseException:
            for fd in (stdin, stdout, stderr):
                os.close(fd)
            raise
        await process.connect(stdin, stdout, stderr)
        return process

    async def _connected(self) -> socket.socket:
        async with self._starting:
            if self._socket is None:
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    self._server = await asyncio.create_subprocess_exec(
                        _PYTHON,
                        *("-I", "-S", "-X", "utf8", str(_FORKSERVER)),
                        stdin=theirs.fileno(),
                        env={},  # none of the gateway's secrets (each shell's environment comes with it)
                    )
                except OSError as exc:
                    ours.close()
                    raise ShellUnavailable(f"cannot start the shells' fork server: {exc}") from exc
                finally:
                    theirs.close()
                asyncio.get_running_loop().add_reader(ours.fileno(), self._readable)
                self._socket = ours
            return self._socket

    def _readable(self) -> None:
        while self._socket is not None:
            try:
                packet = self._socket.recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                packet = b""
            if not packet:
                self._lost()
                return
            self._answer(packet)

    def _answer(self, packet: bytes) -> None:
        kind, _, rest = packet.decode(errors="replace").partition(" ")
        if kind == "X":
            pid, code = rest.split()
            ended = self._running.pop(int(pid), None)
            if ended is not None:
                ended.exited(int(code))
            return
        process, answered = self._waiting.popleft()
        if kind == "S":
            process.pid = int(rest)
            self._running[process.pid] = process
            if answered.done():  # its caller gave up meanwhile: leave nothing running
                kill_process_group(process.pid, signal.SIGKILL)
            else:
                answered.set_result(None)
        elif not answered.done():
            answered.set_exception(ShellUnavailable(f"cannot start bash: {rest.partition(' ')[2]}"))

    def _lost(self) -> None:
        """The fork server is gone: fail what waits, end its shells, and start anew next time."""
        if self._socket is not None:
            asyncio.get_running_loop().remove_reader(self._socket.fileno())
            self._socket.close()
            self._socket = None
        while self._waiting:
            _, answered = self._waiting.popleft()
            if not answered.done():
                answered.set_exception(ShellUnavailable("the shells' fork server ended"))
        running, self._running = self._running, {}
        for pid, process in running.items():
            kill_process_group(pid, signal.SIGKILL)
            process.exited(None)

    async def aclose(self) -> None:
        """Stop the fork server (shells still running keep running: their sessions end them)."""
        server, self._server = self._server, None
        if self._socket is not None:
            asyncio.get_running_loop().remove_reader(self._socket.fileno())
            self._socket.close()
            self._socket = None
        if server is not None:
            try:
                await asyncio.wait_for(server.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    server.kill()
                await server.wait()
