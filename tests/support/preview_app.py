"""A small web app of the kind an agent starts inside the sandbox, for the preview-proxy tests.

Standard library only (it runs with the sandbox's bare ``python3`` too):
``python3 preview_app.py --port P [--host ::1]``. Every answer is HTTP/1.1 with keep-alive.

- any method, any other path: JSON echo of method, path, raw query, request headers, body length and
  SHA-256, and the peer port (the same peer port twice means a reused connection)
- ``/redirect`` (302 to ``/landing?from=redirect``), ``/redirect-absolute`` (to ``http://127.0.0.1:P/landing``)
- under ``/absproxy/P/`` too, as an app built with that base path (its redirects keep the base)
- ``/sse``: one event, then after ``?pause=`` seconds (default 2) a second one, chunked
- ``/download?bytes=N[&framing=length]``: N bytes streamed chunked (or after a Content-Length), never held whole
- ``/downloads``: how many bytes each ended download wrote, oldest first (a cut-off one wrote fewer than N)
- ``/hang``: answers nothing for a minute
- ``/cookie``: sets ``agentbox_session`` (the gateway's reserved name) and ``app_cookie``
- ``/csp``: an HTML page with a ``Content-Security-Policy`` of its own
- ``/ws``: WebSocket echo, choosing the first subprotocol offered
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import socket
import struct
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CHUNK = 256 * 1024
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: Bytes written by each download that ended, whole or cut off (shared by the server's threads).
    downloads: list[int] = []
    #: Headers and body leave in one write (and small writes are not held back), as in real servers.
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(
        self, status: int, body: bytes, headers: dict[str, str] | None = None, content_type: str = "application/json"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _chunked_start(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _handle(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        port = self.server.server_address[1]
        base = f"/absproxy/{port}"  # an app built to be served under /absproxy/<port>/ also works there
        base = base if url.path.startswith(base + "/") else ""
        route = url.path[len(base) :]
        if route == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            self._websocket()
        elif route == "/redirect":
            self._send(302, b"", {"Location": f"{base}/landing?from=redirect"})
        elif route == "/redirect-absolute":
            self._send(302, b"", {"Location": f"http://127.0.0.1:{port}{base}/landing"})
        elif route == "/cookie":
            self.send_response(200)
            self.send_header("Set-Cookie", "agentbox_session=from-the-app; Path=/")
            self.send_header("Set-Cookie", "app_cookie=1; Path=/")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        elif route == "/csp":
            policy = {"Content-Security-Policy": "img-src 'self'"}
            self._send(200, b"<!doctype html><p>app page</p>", policy, "text/html")
        elif route == "/sse":
            self._chunked_start("text/event-stream")
            self._chunk(b"data: first\n\n")
            time.sleep(float(query.get("pause", ["2"])[0]))
            self._chunk(b"data: second\n\n")
            self._chunk(b"")
        elif route == "/download":
            size = int(query.get("bytes", ["0"])[0])
            block = bytes(range(256)) * (CHUNK // 256)
            chunked = query.get("framing", ["chunked"])[0] == "chunked"
            if chunked:
                self._chunked_start("application/octet-stream")
            else:  # a file download: Content-Length, then the bytes
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(size))
                self.end_headers()
            written = 0
            try:
                while written < size:
                    piece = block[: min(CHUNK, size - written)]
                    self._chunk(piece) if chunked else self.wfile.write(piece)
                    written += len(piece)
                if chunked:
                    self._chunk(b"")
            finally:
                self.downloads.append(written)
        elif route == "/downloads":
            self._send(200, json.dumps(self.downloads).encode())
        elif route == "/hang":
            time.sleep(60)
            self.close_connection = True
        else:
            body = self._body()
            echo = {
                "method": self.command,
                "path": url.path,
                "query": url.query,
                "headers": [[name.lower(), value] for name, value in self.headers.items()],
                "body_length": len(body),
                "body_sha256": hashlib.sha256(body).hexdigest(),
                "peer": self.client_address[1],
            }
            self._send(200, json.dumps(echo).encode())

    def _websocket(self) -> None:
        key = self.headers["Sec-WebSocket-Key"]
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        offered = [p.strip() for p in self.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        if offered:
            self.send_header("Sec-WebSocket-Protocol", offered[0])
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        while True:
            header = self.rfile.read(2)
            if len(header) < 2:
                return
            opcode, length = header[0] & 0x0F, header[1] & 0x7F
            if length == 126:
                length = struct.unpack("!H", self.rfile.read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if header[1] & 0x80 else b"\0\0\0\0"
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
            if opcode == 0x8:  # close: answer it and stop
                self._frame(0x8, payload[:2])
                return
            if opcode in (0x1, 0x2):
                self._frame(opcode, payload)

    def _frame(self, opcode: int, payload: bytes) -> None:
        size = len(payload)
        if size < 126:
            head = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        self.wfile.write(head + payload)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


class Server(ThreadingHTTPServer):
    daemon_threads = True


class Server6(Server):
    address_family = socket.AF_INET6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    server_class = Server6 if ":" in args.host else Server
    server_class((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
