"""Run real ASGI apps and processes on 127.0.0.1 random ports for the duration of a test."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping

import httpx
import uvicorn
from starlette.types import ASGIApp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serve_app(app: ASGIApp, port: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread (lifespan on); yields ``http://127.0.0.1:<port>``.

    Without a ``port`` the server gets a socket already bound to a free one: a port chosen and then
    bound could be taken in between by another worker's server."""
    sockets = None
    if port is None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        port, sockets = listener.getsockname()[1], [listener]
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", ws="websockets-sansio"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        for listener in sockets or ():
            listener.close()


def wait_http(url: str, timeout: float = 30.0, expect: int | None = 200) -> None:
    """Poll ``url`` until it answers (with ``expect`` when given); bounded by ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Exception | str = "no answer"
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url, timeout=2)
            if expect is None or response.status_code == expect:
                return
            last = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout}s: {last}")


@contextlib.contextmanager
def run_command(
    args: list[str], env: Mapping[str, str] | None = None, ready_url: str | None = None, timeout: float = 30.0
) -> Iterator[subprocess.Popen]:
    """Start a console command (``aiod start``, ...) in its own process group and stop it after.

    A gateway started so serves no browser proxy on its fixed default port (18093) unless ``env``
    asks: another worker's gateway may hold that port at the same time."""
    full_env = {"AGENTBOX_BROWSER_PROXY_PORT": "0", **os.environ, **(env or {})}
    process = subprocess.Popen(
        args, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        if ready_url:
            try:
                wait_http(ready_url, timeout=timeout, expect=None)
            except TimeoutError:
                process.kill()
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                raise TimeoutError(f"{args} did not become ready; output:\n{output}") from None
        yield process
    finally:
        if process.poll() is None:
            stop_group(process)


def stop_group(process: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM the process group led by ``process``, SIGKILL it after ``grace`` seconds; reap the child."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 15)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()


def console_script(name: str) -> str:
    """The path of one of the project's console commands in the running interpreter's environment."""
    return os.path.join(os.path.dirname(sys.executable), name)


def raw_get(port: int, target: str) -> int:
    """Send ``GET <target>`` byte for byte (no client re-encoding) to 127.0.0.1; the answer's status."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])
