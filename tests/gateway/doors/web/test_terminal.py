"""``/v1/shell/ws``: an interactive bash on a PTY, terminal bytes both ways, a JSON resize message,
the sandbox's key-free environment, and everything it started killed when the socket closes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect as aconnect
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from agentbox_gateway.planes.shell import InvalidRequest, SessionLimit, Terminals
from agentbox_gateway.planes.shell.terminal import MAX_TERMINALS

KEY_ENV = "AIO_API_KEY"


pytestmark = pytest.mark.usefixtures("own_home")


def read_until(socket: ClientConnection, marker: bytes, timeout: float = 10) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{marker!r} not seen in {seen[-500:]!r}"
        message = socket.recv(timeout=left)
        seen += message if isinstance(message, bytes) else message.encode()
    return seen


def next_control(socket: ClientConnection) -> dict:
    """The next text frame (a control message), skipping terminal output (binary frames)."""
    deadline = time.monotonic() + 10
    while True:
        message = socket.recv(timeout=max(0.1, deadline - time.monotonic()))
        if isinstance(message, str):
            return json.loads(message)


def terminal(gateway: str) -> ClientConnection:
    return connect(gateway.replace("http://", "ws://") + "/v1/shell/ws", open_timeout=10)


def test_typed_bytes_run_in_a_terminal_with_a_size(gateway: str) -> None:
    with terminal(gateway) as socket:
        socket.send(json.dumps({"type": "resize", "cols": 123, "rows": 45}))
        socket.send(b"tty; stty size; echo out-$((40+2))\n")
        seen = read_until(socket, b"out-42")
    assert b"/dev/pts/" in seen and b"45 123" in seen


def test_text_frames_are_typed_too_and_bad_control_messages_are_answered(gateway: str) -> None:
    with terminal(gateway) as socket:
        socket.send(json.dumps({"type": "resize", "cols": 0, "rows": 10}))
        assert next_control(socket)["type"] == "error"
        socket.send(json.dumps({"type": "dance"}))
        error = next_control(socket)
        assert error["type"] == "error" and "dance" in error["message"]
        socket.send("echo text-$((1+1))\n")
        read_until(socket, b"text-2")


def test_the_terminal_has_no_key_in_its_environment(gateway: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "terminal-secret")
    with terminal(gateway) as socket:
        socket.send(b'echo "key=[${AIO_API_KEY-unset}]"\n')
        seen = read_until(socket, b"key=[unset]")
    assert b"terminal-secret" not in seen


def test_closing_the_socket_kills_everything_the_terminal_started(gateway: str) -> None:
    with terminal(gateway) as socket:
        # a background job in its own process group, and an orphan that left the shell's tree (durations
        # no other test uses, since pgrep sees the whole machine)
        socket.send(b"sleep 28173 & (sleep 28174 &) ; echo \"pids-$(pgrep -d, -f 'sleep 2817[34]')-\"end\n")
        seen = read_until(socket, b"-end\r\n")
    pids = [int(p) for p in seen.rsplit(b"pids-", 1)[1].split(b"-end")[0].split(b",") if p]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if os.path.exists(f"/proc/{pid}")]


@pytest.mark.anyio
async def test_terminals_are_bounded_and_sizes_checked() -> None:
    terminals = Terminals(limit=1)
    first = await terminals.open()
    try:
        with pytest.raises(SessionLimit):
            await terminals.open()
        for cols, rows in ((0, 5), (5, 1001), ("80", 24), (True, 24)):
            with pytest.raises(InvalidRequest):
                first.resize(cols, rows)
    finally:
        await terminals.aclose()
    assert len(terminals) == 0
    second = await terminals.open()
    await terminals.close(second)


def _terminal_shells() -> list[int]:
    """The gateway's interactive bashes (the test server runs in this process, so they are our children)."""
    me, shells = str(os.getpid()), []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if ppid == me and len(cmdline) > 1 and cmdline[0].endswith(b"bash") and cmdline[1] == b"-i":
            shells.append(int(entry))
    return shells


def _no_shells_left(timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while _terminal_shells() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _terminal_shells()


@pytest.mark.anyio
async def test_concurrent_opens_never_exceed_the_terminal_limit(gateway: str) -> None:
    """64 sockets opened at once: exactly the limit get a shell, the others are closed with 1013 and no
    bash is started for them; closing the sockets ends every shell."""
    url, attempts = gateway.replace("http://", "ws://") + "/v1/shell/ws", 64
    opened: list[int] = []
    refused: list[int | None] = []
    settled, release = anyio.Event(), anyio.Event()

    async def one(n: int) -> None:
        async with aconnect(url, open_timeout=30) as socket:
            try:
                await socket.send(f"echo up-$((1000+{n}))\n".encode())
                seen = b""
                while f"up-{1000 + n}\r\n".encode() not in seen:
                    message = await socket.recv()
                    seen += message if isinstance(message, bytes) else message.encode()
                opened.append(n)
            except ConnectionClosed as closed:
                refused.append(closed.rcvd.code if closed.rcvd else None)
            if len(opened) + len(refused) == attempts:
                settled.set()
            await release.wait()

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tasks:
            for n in range(attempts):
                tasks.start_soon(one, n)
            await settled.wait()
            shells = _terminal_shells()
            release.set()
    assert len(opened) == MAX_TERMINALS and refused == [1013] * (attempts - MAX_TERMINALS)
    assert len(shells) == MAX_TERMINALS
    assert await anyio.to_thread.run_sync(_no_shells_left)
