"""The HTTP edge of ``/mcp``: what happens to a request before the MCP SDK sees it and to an error
answer after. A request without ``Accept`` (or with a blank one) is treated as ``Accept: */*``, the
one rule of every MCP endpoint here (``agentbox_common.service.mcp_endpoint``), and every error
answer is a JSON-RPC error object with a clear message, whichever layer refused (the guards, the
SDK's body limit or its Content-Type check), so clients built on the SDK can tell a 401 from a 413."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import INVALID_REQUEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbox_common.service import mcp_endpoint

MCP_PATH = "/mcp"
#: Clearer words for the SDK's plain-text refusals, by HTTP status.
_MESSAGES = {413: "Request body too large: /mcp accepts at most {mib:g} MiB"}


def jsonrpc_http_error(message: str, code: int = INVALID_REQUEST) -> dict[str, Any]:
    """The body of an HTTP-level refusal on ``/mcp``: a JSON-RPC error with no request id."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class McpEdge:
    """ASGI wrapper around the ``/mcp`` endpoint; ``max_body`` only words the 413 message."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = mcp_endpoint(app)
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _JsonRpcErrors(send, self.max_body))


class _JsonRpcErrors:
    """A ``send`` that rewrites a non-JSON error answer into a JSON-RPC error, keeping its status
    and headers other than the body's."""

    def __init__(self, send: Send, max_body: int) -> None:
        self.send = send
        self.max_body = max_body
        self.start: Message | None = None
        self.body = bytearray()

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            content_type = dict(message.get("headers", [])).get(b"content-type", b"")
            if message["status"] >= 400 and not content_type.startswith(b"application/json"):
                self.start = message
                return
        elif message["type"] == "http.response.body" and self.start is not None:
            self.body += message.get("body", b"")
            if not message.get("more_body", False):
                await self._send_rewritten()
            return
        await self.send(message)

    async def _send_rewritten(self) -> None:
        assert self.start is not None
        status = self.start["status"]
        text = self.body.decode("utf-8", "replace").strip() or f"HTTP {status}"
        template = _MESSAGES.get(status)
        message = template.format(mib=self.max_body / 2**20) if template else text
        payload = json.dumps(jsonrpc_http_error(message)).encode()
        kept = [(k, v) for k, v in self.start.get("headers", []) if k not in (b"content-type", b"content-length")]
        await self.send(
            {
                **self.start,
                "headers": [
                    *kept,
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": payload})
