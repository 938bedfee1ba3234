"""The local forwarding proxy Chromium's PAC file points at (loopback only). Per request it follows
the current settings: a mapping goes to its local port, an excluded host directly, anything else to
the upstream proxy with ``Proxy-Authorization`` added here, so credentials never reach Chromium, the
PAC file or an answer. It also serves the PAC file itself at ``/proxy.pac`` (Chromium fetches it
without the gateway's API key). Every connection carries one request (``Connection: close``), so a
connection never mixes destinations."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable

from .errors import ProxySettingError
from .rules import ProxyConfig, Route, Upstream, split_url

logger = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
CHUNK = 64 * 1024
PAC_PATH = "/proxy.pac"
_HOP_HEADERS = {"connection", "proxy-connection", "keep-alive", "proxy-authorization", "te", "upgrade"}
#: ``Host`` names the PAC file is served to: a page whose name was rebound to 127.0.0.1 reads nothing.
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def proxy_authorization(upstream: Upstream) -> str | None:
    if upstream.username is None:
        return None
    token = base64.b64encode(f"{upstream.username}:{upstream.password or ''}".encode()).decode()
    return f"Basic {token}"


class Forwarder:
    """``start`` binds 127.0.0.1:``port`` (0: any free port); ``config`` and ``pac`` are read per request."""

    def __init__(self, config: Callable[[], ProxyConfig], pac: Callable[[], str]) -> None:
        self._config = config
        self._pac = pac
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port, limit=HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            await self._handle(head, reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        except asyncio.CancelledError:  # the gateway is stopping: this connection's task ends here
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        method, _, rest = request_line.partition(" ")
        target = rest.rpartition(" ")[0]
        headers = [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in lines)]
        if method == "GET" and target.split("?")[0] == PAC_PATH:
            host = next((value for name, value in headers if name.lower() == "host"), "")
            if host.rpartition(":")[0] not in _LOOPBACK_NAMES and host not in _LOOPBACK_NAMES:
                await _answer(writer, 421, "Misdirected Request", "the PAC file is served on loopback names only\n")
                return
            await _answer(writer, 200, "OK", self._pac(), "application/x-ns-proxy-autoconfig")
            return
        config = self._config()
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            if not port_text.isdigit():
                await _answer(writer, 400, "Bad Request", "CONNECT needs host:port\n")
                return
            await self._tunnel(config, host.strip("[]"), int(port_text), reader, writer)
            return
        try:
            scheme, host, port, path = split_url(target)
        except ProxySettingError:
            await _answer(writer, 400, "Bad Request", "this is the browser's forwarding proxy\n")
            return
        route = config.route(scheme, host, port, path)
        kept = [(name, value) for name, value in headers if name.lower() not in _HOP_HEADERS]
        if route.kind == "proxy" and config.upstream is not None:
            upstream = config.upstream
            destination, line = (upstream.host, upstream.port), f"{method} {target} HTTP/1.1"
            authorization = proxy_authorization(upstream)
            if authorization:
                kept.append(("Proxy-Authorization", authorization))
        else:
            destination, line = _direct(route, host, port, path)
            line = f"{method} {line} HTTP/1.1"
        outgoing = "\r\n".join([line, *(f"{n}: {v}" for n, v in kept), "Connection: close", "", ""])
        remote = await _open(destination, writer)
        if remote is None:
            return
        remote_reader, remote_writer = remote
        remote_writer.write(outgoing.encode("latin-1"))
        await _pipe(reader, writer, remote_reader, remote_writer)

    async def _tunnel(
        self, config: ProxyConfig, host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        route = config.route("https", host, port, None)
        upstream = config.upstream if route.kind == "proxy" else None
        destination = (upstream.host, upstream.port) if upstream else _direct(route, host, port, "/")[0]
        remote = await _open(destination, writer)
        if remote is None:
            return
        remote_reader, remote_writer = remote
        if upstream is not None:
            authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
            authorization = proxy_authorization(upstream)
            if authorization:
                lines.append(f"Proxy-Authorization: {authorization}")
            remote_writer.write(("\r\n".join([*lines, "", ""])).encode("latin-1"))
            try:
                answer = await asyncio.wait_for(remote_reader.readuntil(b"\r\n\r\n"), CONNECT_TIMEOUT)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
                answer = b""
            status = answer.split(b" ", 2)[1] if answer.count(b" ") >= 2 else b""
            if status != b"200":
                remote_writer.close()
                reason = f"the upstream proxy answered {status.decode(errors='replace') or 'nothing'}"
                await _answer(writer, 502, "Bad Gateway", f"{reason}\n")
                return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await _pipe(reader, writer, remote_reader, remote_writer)


def _direct(route: Route, host: str, port: int, path: str) -> tuple[tuple[str, int], str]:
    """Where a mapped or direct request connects, and the origin-form target it sends."""
    if route.kind == "mapping" and route.mapping is not None:
        mapping = route.mapping
        return (mapping.target_host, mapping.target_port), mapping.rewrite(path)
    return (host, port), path


async def _open(
    destination: tuple[str, int],
    writer: asyncio.StreamWriter,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    try:
        return await asyncio.wait_for(asyncio.open_connection(*destination, limit=HEAD_LIMIT), CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        host, port = destination
        logger.debug("forwarder cannot reach %s:%d: %s", host, port, type(exc).__name__)
        await _answer(writer, 502, "Bad Gateway", f"cannot connect to {host}:{port}: {type(exc).__name__}\n")
        return None


async def _answer(
    writer: asyncio.StreamWriter, status: int, reason: str, body: str, content_type: str = "text/plain; charset=utf-8"
) -> None:
    data = body.encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
        f"Cache-Control: no-store\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _pipe(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    remote_reader: asyncio.StreamReader,
    remote_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until the remote side has finished answering; then close it."""

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await source.read(CHUNK):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()

    upload = asyncio.create_task(copy(reader, remote_writer))
    try:
        await copy(remote_reader, writer)  # the answer is complete: what the client still sends is moot
    finally:
        upload.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await upload
        remote_writer.close()
        with contextlib.suppress(Exception):
            await remote_writer.wait_closed()
