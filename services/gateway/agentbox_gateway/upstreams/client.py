"""One HTTP client per upstream MCP server: raw JSON-RPC, one POST per request.

No ``initialize``, no session and no ``MCP-Protocol-Version`` header: a stateless upstream then
assumes 2025-03-26, which every server in use accepts, whereas sending the gateway's own (newer)
version gets a 400 from servers that do not speak it. Raw JSON-RPC keeps the forwarded answer
byte-for-byte what the upstream said and costs one loopback round trip per call."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx

from .config import UpstreamConfig

logger = logging.getLogger(__name__)

#: Streamable HTTP requires a client to accept both answer kinds; the upstream picks one.
_REQUEST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: A runaway cursor chain stops here; the tools gathered so far are still published.
MAX_LIST_PAGES = 32
#: Loopback connects either succeed at once or are refused; anything longer is a stuck upstream.
CONNECT_TIMEOUT = 5.0


class UpstreamUnavailable(Exception):
    """The upstream could not be reached or sent no usable answer; the message is the reason."""


class UpstreamTimeout(UpstreamUnavailable):
    """The upstream accepted the request but did not answer in time."""


class UpstreamRpcError(Exception):
    """The upstream answered with a JSON-RPC error object (kept as sent)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")))
        self.error = error


def _describe(exc: httpx.HTTPError) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return "connect timed out"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(exc, httpx.ConnectError):
        lowered = text.lower()
        refused = "refused" in lowered or "all connection attempts failed" in lowered
        return "connection refused" if refused else f"cannot connect: {text}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection closed: {text}"
    return f"{type(exc).__name__}: {text}"


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event (comments, ``event`` and ``id`` fields ignored)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        if key == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


def _answer_to(message: Any, request_id: int) -> dict[str, Any] | None:
    """``message`` when it is the JSON-RPC response to ``request_id`` (batches searched too)."""
    if isinstance(message, list):
        return next((m for m in (_answer_to(item, request_id) for item in message) if m is not None), None)
    if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
        return message
    return None


async def _http_failure(response: httpx.Response) -> UpstreamUnavailable:
    """A non-200 answer, with the JSON-RPC error message when the body carries one."""
    body = await response.aread()
    reason = f"HTTP {response.status_code}"
    try:
        message = json.loads(body).get("error", {}).get("message")
    except (ValueError, AttributeError):
        message = None
    return UpstreamUnavailable(f"{reason}: {message}" if isinstance(message, str) and message else reason)


async def _read_answer(response: httpx.Response, request_id: int) -> dict[str, Any]:
    if response.status_code != 200:
        raise await _http_failure(response)
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    try:
        if media_type == "application/json":
            answer = _answer_to(json.loads(await response.aread()), request_id)
            if answer is None:
                raise UpstreamUnavailable("the answer is not the response to the request")
            return answer
        if media_type == "text/event-stream":
            async for data in _sse_data(response.aiter_lines()):
                answer = _answer_to(json.loads(data), request_id)
                if answer is not None:
                    return answer
            raise UpstreamUnavailable("the event stream ended without a response")
    except ValueError as exc:
        raise UpstreamUnavailable(f"invalid JSON in the answer: {exc}") from None
    raise UpstreamUnavailable(f"unexpected answer type {media_type or '(none)'!r}")


class UpstreamClient:
    """Talks to one upstream over keep-alive connections; requests run concurrently."""

    def __init__(self, config: UpstreamConfig, *, list_timeout: float, call_timeout: float) -> None:
        self.config = config
        self.list_timeout = list_timeout
        self.call_timeout = call_timeout
        self._ids = itertools.count(1)
        # trust_env=False: a proxy from the environment must never see loopback traffic.
        self._http = httpx.AsyncClient(
            headers=dict(config.headers),
            timeout=httpx.Timeout(call_timeout, connect=min(CONNECT_TIMEOUT, call_timeout)),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=16),
            trust_env=False,
        )

    @property
    def name(self) -> str:
        return self.config.name

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``result`` of one JSON-RPC request; :class:`UpstreamRpcError` for an ``error``."""
        request_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        try:
            async with self._http.stream(
                "POST", self.config.url, content=json.dumps(body).encode(), headers=_REQUEST_HEADERS
            ) as response:
                answer = await _read_answer(response, request_id)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(_describe(exc)) from None
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(_describe(exc)) from None
        if "error" in answer:
            error = answer["error"]
            raise UpstreamRpcError(error if isinstance(error, dict) else {"code": -32603, "message": str(error)})
        result = answer["result"]
        if not isinstance(result, dict):
            raise UpstreamUnavailable("the answer's result is not an object")
        return result

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every page of ``tools/list`` (raw tool objects), all within the list timeout."""
        tools: list[dict[str, Any]] = []
        seen: set[str] = set()
        cursor: str | None = None
        try:
            async with asyncio.timeout(self.list_timeout):
                for _ in range(MAX_LIST_PAGES):
                    result = await self.request("tools/list", {"cursor": cursor} if cursor else None)
                    page = result.get("tools")
                    if not isinstance(page, list):
                        raise UpstreamUnavailable("the tools/list answer has no tools array")
                    tools.extend(page)
                    cursor = result.get("nextCursor")
                    if not cursor:
                        return tools
                    if not isinstance(cursor, str) or cursor in seen:
                        logger.warning("upstream %s: tools/list repeated or sent an invalid cursor", self.name)
                        return tools
                    seen.add(cursor)
        except TimeoutError:
            raise UpstreamTimeout(f"no tools/list answer within {self.list_timeout:g} s") from None
        logger.warning("upstream %s: tools/list has more than %d pages; the rest is ignored",
                       self.name, MAX_LIST_PAGES)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """The raw ``tools/call`` result, bounded by the call timeout (SSE keep-alives included)."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        try:
            async with asyncio.timeout(self.call_timeout):
                return await self.request("tools/call", params)
        except TimeoutError:
            raise UpstreamTimeout(f"no answer within {self.call_timeout:g} s") from None

    async def aclose(self) -> None:
        await self._http.aclose()
