"""The MCP endpoint of aicodebox's MCP mode, ready to serve standalone or to mount in API mode.

``build_mcp_asgi(settings, locks, adapter)`` returns an :class:`McpEndpoint`:

* ``app`` — an ASGI app that answers MCP at whatever path it is routed from (it ignores the
  path), behind the token check. Route it at ``/`` and ``/mcp`` (standalone) or ``/mcp`` and
  ``/mcp/`` (API mode) with explicit routes, not a Mount, so neither spelling redirects.
* ``session_manager`` — the SDK's session manager; the host app must enter
  ``async with endpoint.session_manager.run():`` in its lifespan (once per endpoint).
* ``tasks`` — ``run_prompt``'s tasks (the tasks extension); the host app enters
  ``endpoint.tasks.running()`` in its lifespan too.
* ``tools`` — the tool implementation, sharing the ``locks`` object passed in, so API mode's
  ``/run`` and OpenAI endpoint keep out of the same workspaces as ``run_prompt``.

Transport: the official SDK's low-level ``Server``, stateless, answering in SSE framing
(``json_response=False``) like aicodebox does — which is also what makes the SDK cancel a tool
handler when its client disconnects, killing the agent's process group (an SDK session would keep
it running). What a handshake-era client sets for itself (``logging/setLevel``) is kept by a
session id all the same: the answer to ``initialize`` carries a fresh random ``Mcp-Session-Id``
(:class:`SessionIds`), which the client then sends with every request. DNS-rebinding protection
is on with the configured host and origin lists (421 bad Host, 403 bad Origin).

Auth (:class:`McpTokenGuard`): with ``AICODEBOX_MCP_MODE_TOKEN`` set, a request needs
``Authorization: Bearer <token>`` or a raw ``apiToken=<token>`` query part; otherwise 401
``{"detail":"unauthorized"}``. It runs before the SDK's checks, so an unauthenticated request
gets 401 whatever its Host. It never consults ``AICODEBOX_API_MODE_TOKEN``.

A request without an ``Accept`` header, or with a blank one (Python's urllib, hand-written
clients), is treated as ``Accept: */*``, as HTTP says, instead of the SDK's 406: the one rule of
every MCP endpoint here (``agentbox_common.service.mcp_endpoint``).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentbox_common.asgi import BEARER_CHALLENGE, bearer_token, refuse, replay_body
from agentbox_common.keys import key_matches
from agentbox_common.mcp_progress import LogLevel, RunningCalls
from agentbox_common.mcp_tasks import TaskPolicy, TaskStore
from agentbox_common.mcp_tools import build_server
from agentbox_common.mcp_tools.counting import count_call
from agentbox_common.service import mcp_endpoint
from agentbox_common.version import __version__

from .adapters.base import Adapter
from .locks import WorkspaceLocks
from .mcp_progress import AgentProgress
from .mcp_tools import McpTools
from .settings import McpModeSettings

#: Largest request body accepted (write_file content travels in it).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Largest body :class:`SessionIds` reads to see whether it is an ``initialize``.
MAX_INITIALIZE_BYTES = 64 * 1024
#: Random bytes of an ``Mcp-Session-Id`` (128 bits, sent as 32 hex digits: visible ASCII, as the
#: header requires); a UUID4 would carry only 122.
SESSION_ID_BYTES = 16

INSTRUCTIONS = (
    "aicodebox MCP mode: run_prompt hands a task to a coding agent working in the workspace; "
    "list_files, read_file, write_file and delete_file work on the workspace's files directly."
)


def build_mcp_server(tools: McpTools, tasks: TaskStore | None = None) -> Server:
    """``tasks``: a long ``run_prompt`` becomes a task for clients of the tasks extension (the host
    app runs ``tasks.running()`` in its lifespan)."""
    log_level = LogLevel()

    def agent_events(ctx: ServerRequestContext[Any, Any]) -> AgentProgress:
        """A call's context: where ``run_prompt`` sends the agent's events (this call's client)."""
        return AgentProgress(ctx, log_level)

    return build_server(
        "aicodebox",
        tools.registry,
        version=__version__,
        instructions=INSTRUCTIONS,
        call_context=agent_events,
        log_level=log_level,
        on_call=count_call,
        running=RunningCalls(),  # a ``notifications/cancelled`` arrives on its own POST: find the run by id
        tasks=TaskPolicy(tasks, lambda name: name == "run_prompt") if tasks is not None else None,
    )


def presented_token(scope: Scope) -> list[str]:
    """Tokens a request presents: the Bearer header and every raw ``apiToken=`` query part."""
    bearer = bearer_token(scope)
    found = [bearer] if bearer else []
    query = scope.get("query_string", b"").decode("latin-1")
    found.extend(part[len("apiToken=") :] for part in query.split("&") if part.startswith("apiToken="))
    return found


class McpTokenGuard:
    """401 ``{"detail":"unauthorized"}`` unless the MCP token is presented (no token: open)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def allowed(self, scope: Scope) -> bool:
        if not self.token:
            return True
        # compare every candidate (no short-circuit on a match's position)
        matches = [key_matches(candidate, self.token) for candidate in presented_token(scope)]
        return any(matches)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not self.allowed(scope):
            await refuse(scope, send, 401, {"detail": "unauthorized"}, BEARER_CHALLENGE)
            return
        await self.app(scope, receive, send)


class SessionIds:
    """Give a handshake-era ``initialize`` answer a fresh ``Mcp-Session-Id`` (128 random bits), so
    the client names itself on every later request and what it sets stays its own. The server stays
    stateless: the id only labels the client (an unknown one is a client with nothing set yet), and
    a ``DELETE`` of it is refused with 405 as the spec allows. Only a ``POST`` without a session id
    or protocol version header and with a ``Content-Length`` up to :data:`MAX_INITIALIZE_BYTES` is
    read to tell (2026-07-28 requests always carry the version: they pass untouched)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        length = headers.get("content-length", "")
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or MCP_SESSION_ID_HEADER in headers
            or MCP_PROTOCOL_VERSION_HEADER in headers  # never on an initialize: a later or 2026-07-28 request
            or not length.isdigit()
            or int(length) > MAX_INITIALIZE_BYTES
        ):
            await self.app(scope, receive, send)
            return
        try:
            body = await Request(scope, receive).body()
        except ClientDisconnect:
            return
        await self.app(scope, replay_body(body, receive), _with_session_id(send) if _is_initialize(body) else send)


def _is_initialize(body: bytes) -> bool:
    if b"initialize" not in body:
        return False
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


def _with_session_id(send: Send) -> Send:
    session_id = secrets.token_hex(SESSION_ID_BYTES).encode()

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 200:
            headers = [*message.get("headers", []), (MCP_SESSION_ID_HEADER.encode(), session_id)]
            message = {**message, "headers": headers}
        await send(message)

    return sending


@dataclass(frozen=True)
class McpEndpoint:
    app: ASGIApp
    session_manager: StreamableHTTPSessionManager
    server: Server
    tools: McpTools
    #: ``run_prompt``'s tasks: the host app enters ``tasks.running()`` in its lifespan too.
    tasks: TaskStore


def build_mcp_asgi(settings: McpModeSettings, locks: WorkspaceLocks, adapter: Adapter) -> McpEndpoint:
    tools = McpTools(settings, locks, adapter)
    tasks = TaskStore()
    server = build_mcp_server(tools, tasks)
    session_manager = StreamableHTTPSessionManager(
        app=server,
        json_response=False,
        stateless=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(settings.allowed_hosts),
            allowed_origins=list(settings.allowed_origins),
        ),
        max_request_body_size=MAX_BODY_BYTES,
    )
    app = McpTokenGuard(mcp_endpoint(SessionIds(session_manager.handle_request)), settings.token)
    return McpEndpoint(app=app, session_manager=session_manager, server=server, tools=tools, tasks=tasks)
