"""A stand-in upstream HTTP proxy for the browser-proxy tests: it records every proxied request
(absolute-form request line and ``Proxy-Authorization``) and answers it itself with a small page
naming the URL (a ``CONNECT`` tunnel's first request likewise), so a test sees both that the browser
went through it and what it asked for. With ``credentials`` it answers 407 to requests without them,
as an authenticating proxy does."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class ProxyRequest:
    method: str
    target: str
    authorization: str | None


@dataclass
class RecordingProxy:
    port: int = 0
    credentials: tuple[str, str] | None = None
    requests: list[ProxyRequest] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def targets(self) -> list[str]:
        return [request.target for request in self.requests]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode("latin-1")
            method, target, _ = head.split("\r\n", 1)[0].split(" ", 2)
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:] if line)
            }
            authorization = headers.get("proxy-authorization")
            self.requests.append(ProxyRequest(method, target, authorization))
            if self.credentials is not None:
                expected = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
                if authorization != expected:
                    writer.write(
                        b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                    )
                    await writer.drain()
                    return
            if method == "CONNECT":  # a tunnel: what comes through it is answered as a plain request
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                tunneled = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).decode("latin-1")
                target = f"{target} {tunneled.split(' ', 2)[1]}"
            body = f"<!doctype html><title>proxied</title><p id='via'>proxied {target}</p>".encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()


@contextlib.contextmanager
def recording_proxy(credentials: tuple[str, str] | None = None) -> Iterator[RecordingProxy]:
    """Run a :class:`RecordingProxy` on a free 127.0.0.1 port, in a thread of its own."""
    proxy = RecordingProxy(credentials=credentials)
    loop = asyncio.new_event_loop()
    server: asyncio.Server | None = None

    async def start() -> None:
        nonlocal server
        server = await asyncio.start_server(proxy._serve, "127.0.0.1", 0)
        proxy.port = server.sockets[0].getsockname()[1]

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield proxy
    finally:

        async def stop() -> None:
            """Close the server and the connections still open (a browser keeps idle ones)."""
            assert server is not None
            server.close()
            connections = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in connections:
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
