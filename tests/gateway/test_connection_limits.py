"""Bounded connections in every program that serves through ``agentbox_common.serving``: a request
whose headers or body do not arrive in time is closed, and slow clients cannot lock a good one out.
Real programs, real sockets that send too little."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import console_script, free_port, run_command

#: Each program: its health path, and its environment and arguments for a port and a scratch folder.
PROGRAMS = {
    "aiod": ("/health", lambda port, tmp: ({}, ["start", "--port", str(port)])),
    "agentbox-mcp-mode": (
        "/healthz",
        lambda port, tmp: (
            {
                "AICODEBOX_MCP_MODE_PORT": str(port),
                "AICODEBOX_MCP_MODE_HOST": "127.0.0.1",
                "AICODEBOX_WORKSPACE": str(tmp / "ws"),
                "AICODEBOX_AGENT_BINARY": "/bin/true",
            },
            [],
        ),
    ),
}


@contextlib.contextmanager
def program(name: str, tmp_path: Path, **limits: str) -> Iterator[int]:
    health, configure = PROGRAMS[name]
    port = free_port()
    env, args = configure(port, tmp_path)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AICODEBOX_", "AGENTBOX_", "AIO_"))}
    with run_command(
        [console_script(name), *args], env={**base, **env, **limits}, ready_url=f"http://127.0.0.1:{port}{health}"
    ):
        yield port


def until_closed(sock: socket.socket, bound: float = 10.0) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` and what it sent before."""
    start, received = time.monotonic(), b""
    sock.settimeout(bound)
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(4096):
            received += chunk
    return time.monotonic() - start, received


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_half_sent_headers_and_stalled_bodies_are_closed_in_time(name: str, tmp_path: Path) -> None:
    with program(name, tmp_path, AGENTBOX_HEADER_TIMEOUT="1", AGENTBOX_BODY_TIMEOUT="1") as port:
        silent = socket.create_connection(("127.0.0.1", port))
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Accept: */*\r\nContent-Length: 100\r\n\r\n{"jsonrpc":'
        )
        for sock, expected in ((silent, b"HTTP/1.1 408"), (half, b"HTTP/1.1 408"), (stalled, b"")):
            with sock:
                elapsed, received = until_closed(sock)
            assert elapsed < 4, elapsed
            assert received.startswith(expected), received
        assert httpx.get(f"http://127.0.0.1:{port}/{PROGRAMS[name][0].lstrip('/')}").status_code == 200


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_many_slow_clients_do_not_lock_out_a_good_one(name: str, tmp_path: Path) -> None:
    """Long header timeout, a cap of 16: 64 clients sending headers a byte at a time hold no one off."""
    with program(name, tmp_path, AGENTBOX_HEADER_TIMEOUT="60", AGENTBOX_MAX_CONNECTIONS="16") as port:
        slow = []
        for _ in range(64):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)
        try:
            start = time.monotonic()
            for _ in range(5):
                assert httpx.get(f"http://127.0.0.1:{port}{PROGRAMS[name][0]}", timeout=5).status_code == 200
            assert time.monotonic() - start < 5
            time.sleep(0.2)
            still_open = 0
            for sock in slow:
                sock.setblocking(False)
                try:
                    still_open += sock.recv(1) != b""
                except BlockingIOError:
                    still_open += 1
                except ConnectionResetError:
                    pass
            assert still_open <= 16, still_open
        finally:
            for sock in slow:
                sock.close()
