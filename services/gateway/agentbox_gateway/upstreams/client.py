"""One HTTP client per upstream MCP server: raw JSON-RPC, one POST per request.

No ``initialize``, no session and no ``MCP-Protocol-Version`` header: a stateless upstream then
assumes 2025-03-26, which every server in use accepts, whereas sending the gateway's own (newer)
version gets a 400 from servers that do not speak it. Raw JSON-RPC keeps the forwarded answer
what the upstream said (only shaped for the client's protocol version on the way back) and costs
one loopback round trip per call.

The client is aiohttp rather than httpx because every forwarded call pays for it: a POST to a bare
uvicorn app on loopback takes 0.80 ms with httpx, 0.46 ms with httpcore alone (both parse HTTP in
pure Python) and 0.35 ms with aiohttp's C parser, and that difference is what keeps the gateway's
added latency under 1 ms (``bench/bench_aggregation.py``)."""

from __future__ import annotations

import asyncio
import codecs
import itertools
import json
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.types import INTERNAL_ERROR

from agentbox_common.errors import Invalid, TimedOut, Unavailable
from agentbox_common.observability import REQUEST_ID_HEADER, current_request_id

from .config import UpstreamConfig

if TYPE_CHECKING:  # imported where used: a gateway without upstreams never loads aiohttp
    import aiohttp

logger = logging.getLogger(__name__)

#: Receives the ``params`` of each ``notifications/progress`` the upstream sends for a call.
ProgressRelay = Callable[[dict[str, Any]], Awaitable[None]]

#: Streamable HTTP requires a client to accept both answer kinds; the upstream picks one.
_REQUEST_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: A runaway cursor chain stops here; the tools gathered so far are still published.
MAX_LIST_PAGES = 32
#: Closed kept-alive connections one request may come across before it is sent on a new one.
MAX_STALE_CONNECTIONS = 4
#: Loopback connects either succeed at once or are refused; anything longer is a stuck upstream.
CONNECT_TIMEOUT = 5.0
#: The reachability check's connect: a loopback port that is listening accepts within microseconds.
PROBE_TIMEOUT = 0.25


class UpstreamUnavailable(Unavailable):
    """The upstream could not be reached or sent no usable answer; the message is the reason."""


class UpstreamTimeout(TimedOut, UpstreamUnavailable):
    """The upstream accepted the request but did not answer in time."""


class UpstreamRpcError(Invalid):
    """The upstream answered with a JSON-RPC error object (kept as sent): it refused the request."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "")))
        self.error = error

    def error_data(self) -> dict[str, Any]:
        """The error as the gateway re-sends it: an integer code (else internal error), a string
        message and the upstream's ``data`` when it sent one."""
        code = self.error.get("code")
        data = self.error.get("data")
        return {
            "code": code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
            "message": str(self.error.get("message", "")),
            **({"data": data} if data is not None else {}),
        }


def _describe(exc: aiohttp.ClientError) -> str:
    import aiohttp

    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "connect timed out"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connection refused" if isinstance(exc.os_error, ConnectionRefusedError) else f"cannot connect: {text}"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return f"connection closed: {text}"
    return f"{type(exc).__name__}: {text}"


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a UTF-8 byte stream, ended by CRLF, LF or CR as server-sent events allow (a CR
    at the end of a chunk waits for the next chunk, which may start with its LF)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    pending = ""
    async for chunk in chunks:
        pending += decoder.decode(chunk)
        held_cr = pending.endswith("\r")
        lines = (pending[:-1] if held_cr else pending).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        pending = lines.pop() + ("\r" if held_cr else "")
        for line in lines:
            yield line
    pending += decoder.decode(b"", final=True)
    if pending.rstrip("\r"):
        yield pending.rstrip("\r")


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


async def _http_failure(response: aiohttp.ClientResponse) -> UpstreamUnavailable:
    """A non-200 answer, with the JSON-RPC error message when the body carries one."""
    body = await response.read()
    reason = f"HTTP {response.status}"
    try:
        message = json.loads(body).get("error", {}).get("message")
    except (ValueError, AttributeError):
        message = None
    return UpstreamUnavailable(f"{reason}: {message}" if isinstance(message, str) and message else reason)


def _progress_of(message: Any, token: int) -> dict[str, Any] | None:
    """The params of ``message`` when it is a ``notifications/progress`` for ``token``."""
    if isinstance(message, dict) and message.get("method") == "notifications/progress":
        params = message.get("params")
        if isinstance(params, dict) and params.get("progressToken") == token:
            return params
    return None


async def _read_answer(
    response: aiohttp.ClientResponse, request_id: int, on_progress: ProgressRelay | None = None
) -> dict[str, Any]:
    if response.status != 200:
        raise await _http_failure(response)
    media_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
    try:
        if media_type == "application/json":
            answer = _answer_to(json.loads(await response.read()), request_id)
            if answer is None:
                raise UpstreamUnavailable("the answer is not the response to the request")
            return answer
        if media_type == "text/event-stream":
            async for data in _sse_data(_lines(response.content.iter_any())):
                message = json.loads(data)
                answer = _answer_to(message, request_id)
                if answer is not None:
                    return answer
                if on_progress is not None and (progress := _progress_of(message, request_id)) is not None:
                    await on_progress(progress)
            raise UpstreamUnavailable("the event stream ended without a response")
    except ValueError as exc:
        raise UpstreamUnavailable(f"invalid JSON in the answer: {exc}") from None
    raise UpstreamUnavailable(f"unexpected answer type {media_type or '(none)'!r}")


def _still_open(sock: socket.socket) -> bool:
    """Whether ``sock`` is open and untouched: the peer has sent nothing on it, not even its close (a
    non-blocking peek, no waiting). Anything sent (a server's 408 for a connection that never sent a
    request, say) spends it, since a close behind unread bytes would not show."""
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except OSError:
        pass
    return False


async def _note_reuse(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    context.trace_request_ctx["reused"] = True


def _request_id_header() -> dict[str, str] | None:
    """The id of the request being served, so the upstream's logs can be matched with ours."""
    request_id = current_request_id()
    return {REQUEST_ID_HEADER: request_id} if request_id else None


class UpstreamClient:
    """Talks to one upstream over keep-alive connections; requests run concurrently."""

    def __init__(self, config: UpstreamConfig, *, list_timeout: float, call_timeout: float) -> None:
        self.config = config
        self.list_timeout = list_timeout
        self.call_timeout = call_timeout
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._cancels: set[asyncio.Task[None]] = set()
        self._watch: socket.socket | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def _http(self) -> aiohttp.ClientSession:
        """The keep-alive session, made on first use (it belongs to the running event loop)."""
        import aiohttp

        if self._session is None:
            reuse = aiohttp.TraceConfig()
            reuse.on_connection_reuseconn.append(_note_reuse)
            self._session = aiohttp.ClientSession(
                headers={**_REQUEST_HEADERS, **self.config.headers},
                # Only the entry's headers and the two MCP needs: no User-Agent, no compression.
                skip_auto_headers=("User-Agent", "Accept-Encoding"),
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=min(CONNECT_TIMEOUT, self.call_timeout), sock_read=self.call_timeout
                ),
                # No proxy from the environment: loopback traffic never leaves through anything else.
                trust_env=False,
                trace_configs=[reuse],
            )
        return self._session

    async def _post(self, body: bytes) -> aiohttp.ClientResponse:
        """Send one request; the response once its headers are in.

        A kept-alive connection the upstream has closed (idle timeout, restart) shows only when it
        is used. A request that fails that way on a reused connection, before any answer, goes out
        again on the next connection, as browsers do: the upstream closed the connection without
        reading the request, so it did not run it. A failure on a new connection is final."""
        import aiohttp

        for _ in range(MAX_STALE_CONNECTIONS):
            connection = {"reused": False}
            try:
                return await self._http().post(
                    self.config.url, data=body, headers=_request_id_header(), trace_request_ctx=connection
                )
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                if not connection["reused"] or isinstance(exc, aiohttp.ClientConnectorError):
                    raise
        return await self._http().post(self.config.url, data=body, trace_request_ctx={"reused": False})

    async def request(
        self, method: str, params: dict[str, Any] | None = None, on_progress: ProgressRelay | None = None
    ) -> dict[str, Any]:
        """The ``result`` of one JSON-RPC request; :class:`UpstreamRpcError` for an ``error``.

        ``on_progress``: ask for progress (the request id is the token) and relay what comes. A
        request cancelled here closes its answer stream and tells the upstream
        (``notifications/cancelled``), so the upstream stops the work in either protocol era."""
        import aiohttp

        request_id = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if on_progress is not None:
            params = {**(params or {}), "_meta": {"progressToken": request_id}}
        if params is not None:
            body["params"] = params
        try:
            async with await self._post(json.dumps(body).encode()) as response:
                answer = await _read_answer(response, request_id, on_progress)
        except asyncio.CancelledError:
            self._spawn_cancel(request_id)
            raise
        except aiohttp.ClientError as exc:
            if isinstance(exc, TimeoutError):
                raise UpstreamTimeout(_describe(exc)) from None
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
        logger.warning("upstream %s: tools/list has more than %d pages; the rest is ignored", self.name, MAX_LIST_PAGES)
        return tools

    async def reachable(self) -> bool:
        """Whether the upstream still accepts connections, without asking it anything.

        Free while the idle connection opened by an earlier check is open (one non-blocking peek):
        an upstream that exits (killed, crashed, stopped) closes it, so its death shows at once.
        Otherwise one connect, kept for the next check; refused or stuck means unreachable."""
        if self._watch is not None:
            if _still_open(self._watch):
                return True
            self._watch.close()
            self._watch = None
        address = urlsplit(self.config.url)
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                infos = await loop.getaddrinfo(address.hostname, address.port or 80, type=socket.SOCK_STREAM)
                for family, kind, proto, _, target in infos:  # localhost: ::1 and 127.0.0.1
                    sock = socket.socket(family, kind, proto)
                    sock.setblocking(False)
                    try:
                        await loop.sock_connect(sock, target)
                    except BaseException as exc:
                        sock.close()
                        if isinstance(exc, OSError):
                            continue
                        raise
                    self._watch = sock
                    return True
        except (OSError, TimeoutError):
            pass
        return False

    def _spawn_cancel(self, request_id: int) -> None:
        """Post ``notifications/cancelled`` for ``request_id`` in the background (best effort)."""
        body = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the client cancelled the call"},
        }

        async def send() -> None:
            import aiohttp

            try:
                async with asyncio.timeout(CONNECT_TIMEOUT), await self._post(json.dumps(body).encode()):
                    pass
            except (aiohttp.ClientError, TimeoutError) as exc:
                logger.debug("upstream %s: cancel of request %s not sent: %s", self.name, request_id, exc)

        task = asyncio.get_running_loop().create_task(send())
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None, on_progress: ProgressRelay | None = None
    ) -> dict[str, Any]:
        """The raw ``tools/call`` result, bounded by the call timeout (SSE keep-alives included)."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        try:
            async with asyncio.timeout(self.call_timeout):
                return await self.request("tools/call", params, on_progress)
        except TimeoutError:
            raise UpstreamTimeout(f"no answer within {self.call_timeout:g} s") from None

    async def aclose(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self._session is not None:
            await self._session.close()
