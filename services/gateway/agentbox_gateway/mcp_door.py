"""The MCP door: a stateless low-level ``mcp`` Server publishing the built-in tools first, then the
tools of registered upstream MCP servers, and routing each call to whichever owns the name.

Unknown tools are a JSON-RPC ``-32602 unknown tool: <name>`` (as aiod answers); tools that ran and
failed are ``isError`` results, produced by the registry and the upstream router."""

from __future__ import annotations

import time
from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.routing import Route

from agentbox_common.mcp_progress import LogLevel, RunningCalls, cancelled_result
from agentbox_common.observability import ToolOutcome, note_tool_call

from . import __version__, mcp_streaming
from .mcp_edge import MCP_PATH, McpEdge
from .mcp_fast_path import BuiltinCalls, FastCalls, ToolCallFastPath
from .mcp_streaming import current_output_sink, output_sink
from .mcp_tools.registry import ToolRegistry, current_request
from .settings import MAX_MCP_BODY_BYTES
from .upstreams import UpstreamCalls, UpstreamRouter

#: The tool label of calls to names nobody publishes (kept out of the metrics' label values).
UNKNOWN_TOOL = "<unknown>"

INSTRUCTIONS = (
    "agentbox sandbox: a shell, Python and JavaScript interpreters, a file system and a Chromium "
    "browser. All tools share one file system."
)


def build_mcp_server(
    registry: ToolRegistry, upstreams: UpstreamRouter | None = None, running: RunningCalls | None = None
) -> Server:
    """``running``: the calls ``notifications/cancelled`` may name (share it with the routes' forwarder)."""
    reserved = set(registry.names)
    running = running if running is not None else RunningCalls()

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = registry.tools()
        if upstreams is not None:
            tools.extend(await upstreams.list_tools(reserved))
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        started = time.perf_counter()
        try:
            with running.track(ctx.request_id) as scope:
                result = await route_call(ctx, params)
            if scope.cancelled_caught:
                result = cancelled_result()
        except MCPError:
            note_tool_call(
                params.name if known(params.name) else UNKNOWN_TOOL,
                ToolOutcome.JSONRPC_ERROR,
                time.perf_counter() - started,
            )
            raise
        note_tool_call(
            params.name, ToolOutcome.IS_ERROR if result.is_error else ToolOutcome.OK, time.perf_counter() - started
        )
        return result

    def known(name: str) -> bool:
        return name in registry or (upstreams is not None and upstreams.route(name) is not None)

    async def route_call(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        if name in registry:
            token = current_request.set(ctx.request)
            sink = current_output_sink.set(output_sink(ctx))
            try:
                return await registry.call(name, params.arguments)
            finally:
                current_output_sink.reset(sink)
                current_request.reset(token)
        if upstreams is not None:
            result = await upstreams.call_tool(name, params.arguments, mcp_streaming.progress_relay(ctx))
            if result is not None:
                return result
        raise MCPError(types.INVALID_PARAMS, f"unknown tool: {name}")

    def input_schema(name: str) -> dict[str, Any] | None:
        """For the SDK's 2026-era ``Mcp-Param-*`` header check; without it the SDK lists every tool
        (asking every upstream) before each call."""
        if name in registry:
            return registry.input_schema(name)
        return upstreams.input_schema(name) if upstreams is not None else None

    server = Server(
        "agentbox",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )
    mcp_streaming.install(server, running, LogLevel())
    return server


def build_mcp_routes(
    server: Server,
    host: str,
    *,
    upstreams: UpstreamRouter | None = None,
    builtins: frozenset[str] = frozenset(),
    running: RunningCalls | None = None,
    fast_path: bool = True,
) -> list[Route]:
    """``/mcp``: the SDK's streamable-HTTP endpoint (stateless, JSON answers, 8 MiB body limit),
    behind the fast path for built-in and upstream tool calls (``mcp_fast_path``). Call inside
    ``server.session_manager.run()``'s lifespan.

    The SDK's own Host/Origin checks stay off: it would switch them on by itself for a loopback
    ``host`` with a loopback-only allowlist, while the gateway's guards (``security``) apply one
    rule to MCP, REST and CDP alike (``AIO_ALLOWED_HOSTS``, ``AIO_ALLOWED_ORIGINS``). The route is
    wrapped in :class:`McpEdge` (missing ``Accept``, JSON-RPC error bodies). Calls with a progress
    token are answered over SSE (``mcp_streaming``). ``fast_path=False`` sends every request the SDK's
    way (to compare the two)."""
    transport_security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sse_endpoint, sse_manager = mcp_streaming.sse_endpoint(
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
    lifespan_state = mcp_streaming.chain_lifespan(server, sse_manager)
    (route,) = sdk_app.routes
    assert isinstance(route, Route)
    endpoint = route.endpoint
    if fast_path:
        handlers: list[FastCalls] = [BuiltinCalls(server, builtins, lifespan_state)]
        if upstreams:
            handlers.append(
                UpstreamCalls(upstreams, builtins=builtins, server_info=server.server_info_stamp, running=running)
            )
        endpoint = ToolCallFastPath(endpoint, handlers)
    splitter = mcp_streaming.ProgressSplitter(endpoint, sse_endpoint, max_body=MAX_MCP_BODY_BYTES)
    return [Route(MCP_PATH, endpoint=McpEdge(splitter, MAX_MCP_BODY_BYTES))]
