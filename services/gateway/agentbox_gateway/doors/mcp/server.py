"""The MCP door: a stateless low-level ``mcp`` Server publishing the built-in tools first, then the
tools of registered upstream MCP servers, and routing each call to whichever owns the name.

Unknown tools are a JSON-RPC ``-32602 unknown tool: <name>`` (as aiod answers); tools that ran and
failed are ``isError`` results, produced by the registry and the upstream router."""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.subscriptions import SubscriptionBus
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp

from agentbox_common.mcp_progress import LogLevel, RunningCalls
from agentbox_common.mcp_tasks import TaskPolicy, TaskStore, task_input, task_output
from agentbox_common.mcp_tools import build_server
from agentbox_common.mcp_tools.counting import count_call

from ... import __version__
from ...settings import MAX_MCP_BODY_BYTES
from ...upstreams import UpstreamRouter
from ...upstreams.watch import ListWatch
from . import streaming
from .apps import EXTENSIONS, AppViews
from .edge import MCP_PATH, McpEdge
from .fast_path import BuiltinCalls, FastCalls, ToolCallFastPath
from .forwarding import UpstreamCalls
from .notifications import ChangeStream
from .tools.registry import BuiltinRegistry, ToolContext

INSTRUCTIONS = (
    "agentbox sandbox: a shell, Python and JavaScript interpreters, a file system and a Chromium "
    "browser. All tools share one file system."
)

#: The built-ins whose calls may run long enough to become tasks (upstream tools may too).
TASK_TOOLS = frozenset({"sandbox_execute_bash", "sandbox_execute_code"})
#: ``ttlMs`` of ``tools/list`` once every upstream answers, and while one is starting or down.
SETTLED_TTL_MS = 60_000
WAITING_TTL_MS = 1_000


def build_mcp_server(
    registry: BuiltinRegistry,
    upstreams: UpstreamRouter | None = None,
    running: RunningCalls | None = None,
    watch: ListWatch | None = None,
    tasks: TaskStore | None = None,
    views: AppViews | None = None,
) -> Server:
    """``running``: the calls ``notifications/cancelled`` may name (share it with the routes' forwarder);
    ``watch``: serves ``subscriptions/listen`` (run its loop in the lifespan); ``tasks``: long calls
    (:data:`TASK_TOOLS` and the upstreams' tools) become tasks for clients of the tasks extension (run
    its ``running()`` in the lifespan); ``views``: the MCP Apps views, published as ``ui://`` resources
    (the server declares the ``io.modelcontextprotocol/ui`` extension)."""
    return build_server(
        "agentbox",
        registry,
        version=__version__,
        instructions=INSTRUCTIONS,
        call_context=tool_context,
        running=running if running is not None else RunningCalls(),
        log_level=LogLevel(),
        more=UpstreamTools(upstreams, reserved=set(registry.names)) if upstreams is not None else None,
        on_call=count_call,
        listen=watch.listen if watch is not None else None,
        tasks=TaskPolicy(tasks, lambda name: name in TASK_TOOLS or _upstream(upstreams, name)) if tasks else None,
        resources=views,
        extensions=EXTENSIONS if views is not None else None,
    )


def _upstream(upstreams: UpstreamRouter | None, name: str) -> bool:
    return upstreams is not None and upstreams.route(name) is not None


def tool_context(ctx: ServerRequestContext[Any, Any]) -> ToolContext:
    """A built-in call's context: the HTTP request it came with (the SDK's transports and the fast
    path hand it to the SDK as the message's request context) and, when asked for, a progress sink."""
    request = ctx.request if isinstance(ctx.request, HTTPConnection) else None
    return ToolContext(request=request, output=task_output() or streaming.output_sink(ctx), ask=task_input())


class UpstreamTools:
    """The registered upstream MCP servers' tools, published after the built-ins (whose names they
    may not take), with their progress relayed to the caller."""

    def __init__(self, upstreams: UpstreamRouter, reserved: set[str]) -> None:
        self.upstreams = upstreams
        self.reserved = reserved

    async def list_tools(self) -> list[types.Tool]:
        return await self.upstreams.list_tools(self.reserved)

    def owns(self, name: str) -> bool:
        return self.upstreams.route(name) is not None

    @property
    def ttl_ms(self) -> int:
        return SETTLED_TTL_MS if self.upstreams.settled else WAITING_TTL_MS

    def input_schema(self, name: str) -> dict[str, Any] | None:
        return self.upstreams.input_schema(name)

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | None:
        return await self.upstreams.call_tool(params.name, params.arguments, streaming.progress_relay(ctx))


def build_mcp_routes(
    server: Server,
    host: str,
    *,
    upstreams: UpstreamRouter | None = None,
    builtins: frozenset[str] = frozenset(),
    running: RunningCalls | None = None,
    changes: SubscriptionBus | None = None,
    fast_path: bool = True,
) -> list[Route]:
    """``/mcp``: the SDK's streamable-HTTP endpoint (stateless, JSON answers, 8 MiB body limit),
    behind the fast path for built-in and upstream tool calls (``fast_path``). Call inside
    ``server.session_manager.run()``'s lifespan.

    The SDK's own Host/Origin checks stay off: it would switch them on by itself for a loopback
    ``host`` with a loopback-only allowlist, while the gateway's guards (``auth.guards``) apply one
    rule to MCP, REST and CDP alike (``AIO_ALLOWED_HOSTS``, ``AIO_ALLOWED_ORIGINS``). The route is
    wrapped in :class:`McpEdge` (missing ``Accept``, JSON-RPC error bodies). Calls with a progress
    token are answered over SSE (``streaming``). ``fast_path=False`` sends every request the SDK's
    way (to compare the two). ``changes``: a ``GET`` opens the stream of change notifications
    (``notifications``) for handshake-era clients, fed by this bus."""
    transport_security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sse_endpoint, sse_manager = streaming.sse_endpoint(
        server, max_request_body_size=MAX_MCP_BODY_BYTES, security_settings=transport_security
    )
    sdk_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        max_request_body_size=MAX_MCP_BODY_BYTES,
        transport_security=transport_security,
        host=host,
    )
    lifespan_state = streaming.chain_lifespan(server, sse_manager)
    (route,) = sdk_app.routes
    assert isinstance(route, Route)
    # The fast path goes first, so its calls read and parse their body once; the rest, calls asking
    # for progress over SSE included, reach the splitter as they came.
    endpoint: ASGIApp = streaming.ProgressSplitter(route.endpoint, sse_endpoint, max_body=MAX_MCP_BODY_BYTES)
    if fast_path:
        handlers: list[FastCalls] = [BuiltinCalls(server, builtins, lifespan_state)]
        if upstreams:
            handlers.append(
                UpstreamCalls(upstreams, builtins=builtins, server_info=server.server_info_stamp, running=running)
            )
        endpoint = ToolCallFastPath(endpoint, handlers, max_body=MAX_MCP_BODY_BYTES)
    if changes is not None:
        endpoint = ChangeStream(endpoint, changes)
    return [Route(MCP_PATH, endpoint=McpEdge(endpoint, MAX_MCP_BODY_BYTES))]
