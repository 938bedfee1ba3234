"""The low-level SDK ``Server`` every MCP server here is built the same way: ``tools/list`` is the
registry's tools (then those of a :class:`MoreTools`), ``tools/call`` goes to whichever owns the
name, and an unknown name is the JSON-RPC error ``-32602 unknown tool: <name>`` (as aiod answers)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from agentbox_common.mcp_progress import LogLevel, RunningCalls, cancelled_result
from agentbox_common.mcp_tasks import TaskPolicy, call_as_task, declares_tasks
from agentbox_common.mcp_tasks import install as install_tasks
from agentbox_common.mcp_tasks.handshake import CAPABILITY as HANDSHAKE_TASKS

from .registry import ToolRegistry

#: The tool label of calls to names nobody publishes (kept out of the metrics' label values).
UNKNOWN_TOOL = "<unknown>"

Context = ServerRequestContext[Any, Any]
C = TypeVar("C")
#: Builds the call context a server's tools are handed (``ToolRegistry[C]``) from the SDK's own.
CallContext = Callable[[Context], C]
#: Told of every finished call: the tool (:data:`UNKNOWN_TOOL` for a name nobody publishes), its
#: result (``None``: a JSON-RPC error) and its seconds (``counting.count_call`` keeps the metrics).
OnCall = Callable[[str, types.CallToolResult | None, float], None]


class MoreTools(Protocol):
    """Tools published after the registry's and called by name (the gateway's upstream servers)."""

    async def list_tools(self) -> list[types.Tool]: ...

    def owns(self, name: str) -> bool: ...

    def input_schema(self, name: str) -> Mapping[str, Any] | None: ...

    @property
    def ttl_ms(self) -> int:
        """How long a client may keep the last list (2026-07-28's ``ttlMs``): short while it may
        still grow."""
        ...

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult | None:
        """The result, or ``None`` when the name is not (or no longer) one of these tools."""
        ...


class Resources(Protocol):
    """Resources a server publishes (the gateway's MCP App views), built per request: they may
    depend on how the caller reaches the server."""

    async def list_resources(self, ctx: Context) -> list[types.Resource]: ...

    async def read_resource(self, ctx: Context, uri: str) -> types.ReadResourceResult:
        """The contents; an unknown ``uri`` raises ``MCPError`` (``-32602``)."""
        ...


def build_server(
    name: str,
    registry: ToolRegistry[C],
    *,
    version: str,
    instructions: str,
    title: str | None = None,
    call_context: CallContext[C] | None = None,
    running: RunningCalls | None = None,
    log_level: LogLevel | None = None,
    more: MoreTools | None = None,
    on_call: OnCall | None = None,
    listen: ListenHandler | None = None,
    tasks: TaskPolicy | None = None,
    resources: Resources | None = None,
    extensions: Mapping[str, dict[str, Any]] | None = None,
) -> Server:
    """``call_context``: what each registry call is handed beside its arguments (``None``: the tools
    read nothing of their call, and are handed ``None``); ``running``: calls
    ``notifications/cancelled`` may stop (answered :func:`cancelled_result`); ``log_level``:
    ``logging/setLevel`` is served (declaring the ``logging`` capability); ``listen``:
    ``subscriptions/listen`` is served and the host serves the GET stream too (clients of both eras
    are told ``listChanged``); ``tasks``: long calls of the tools it names become tasks, for clients
    that declare the extension or, in the handshake era, send ``params.task``
    (:mod:`agentbox_common.mcp_tasks`); ``resources``: ``resources/list`` and ``resources/read`` are
    served; ``extensions``: declared under ``capabilities.extensions`` (SEP-2133: identifier ->
    settings)."""

    make_context: CallContext[Any] = call_context if call_context is not None else _no_context

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = registry.tools()
        if more is not None:
            tools.extend(await more.list_tools())
        if tasks is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            tools = [_task_capable(tool) if tasks.eligible(tool.name) else tool for tool in tools]
        if more is None:
            return types.ListToolsResult(tools=tools)
        return types.ListToolsResult(tools=tools, ttl_ms=more.ttl_ms)

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult | dict[str, Any]:
        started = time.perf_counter()
        try:
            if tasks is not None and declares_tasks(ctx.params):
                answer = await call_as_task(tasks, ctx, params.name, params.arguments, lambda: route_call(ctx, params))
                if isinstance(answer, dict):  # a task: counted when created, its call was not refused
                    return answer
                result = answer
            elif running is None:
                result = await route_call(ctx, params)
            else:
                with running.track(ctx.request_id) as scope:
                    result = await route_call(ctx, params)
                if scope.cancelled_caught:
                    result = cancelled_result()
        except MCPError:
            if on_call is not None:
                on_call(params.name if known(params.name) else UNKNOWN_TOOL, None, time.perf_counter() - started)
            raise
        if on_call is not None:
            on_call(params.name, result, time.perf_counter() - started)
        return result

    def known(name: str) -> bool:
        return name in registry or (more is not None and more.owns(name))

    async def route_call(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        if name in registry:
            return await registry.call(name, params.arguments, make_context(ctx))
        if more is not None:
            result = await more.call_tool(ctx, params)
            if result is not None:
                return result
        raise MCPError(types.INVALID_PARAMS, f"unknown tool: {name}")

    def input_schema(name: str) -> Mapping[str, Any] | None:
        """For the SDK's 2026-era ``Mcp-Param-*`` header check; without it the SDK lists every tool
        (asking every upstream) before each call."""
        schema = registry.input_schema(name)
        if schema is None and more is not None:
            return more.input_schema(name)
        return schema

    handlers = _ResourceHandlers(resources) if resources is not None else None
    server = Server(
        name,
        version=version,
        title=title,
        instructions=instructions,
        on_list_tools=list_tools,
        # A task's CreateTaskResult is an extension's claimed shape, which the SDK's runner passes on
        # (ServerRunner._serialize) but its handler type does not name.
        on_call_tool=cast(Any, call_tool),
        get_tool_input_schema=input_schema,
        on_subscriptions_listen=listen,
        on_list_resources=handlers.list if handlers is not None else None,
        on_read_resource=handlers.read if handlers is not None else None,
    )
    server.extensions.update(extensions or {})
    if running is not None:
        running.install(server)
    if log_level is not None:
        log_level.install(server)
    if tasks is not None:
        install_tasks(server, tasks)
    handshake_capabilities: dict[str, Any] = {}
    if tasks is not None:
        handshake_capabilities["tasks"] = HANDSHAKE_TASKS
    if listen is not None:
        handshake_capabilities["tools"] = {"listChanged": True}
    if handshake_capabilities:
        server.middleware.append(HandshakeCapabilities(handshake_capabilities))
    return server


def _no_context(ctx: Context) -> None:
    return None


def _task_capable(tool: types.Tool) -> types.Tool:
    return tool.model_copy(update={"execution": types.ToolExecution(task_support="optional")})


class HandshakeCapabilities:
    """Adds to the ``initialize`` answer what the SDK does not derive for the handshake era: the
    ``tasks`` capability (2025-11-25's, which the SDK types but does not serve) and ``listChanged``
    for a server whose host delivers change notifications on the GET stream."""

    def __init__(self, extra: dict[str, dict[str, Any]]) -> None:
        self.extra = extra

    async def __call__(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "initialize" or not isinstance(result, dict):
            return result
        capabilities = dict(result.get("capabilities") or {})
        for name, value in self.extra.items():
            capabilities[name] = {**capabilities.get(name, {}), **value}
        return {**result, "capabilities": capabilities}


class _ResourceHandlers:
    """The SDK ``Server``'s ``resources/list`` and ``resources/read`` handlers over :class:`Resources`."""

    def __init__(self, resources: Resources) -> None:
        self.resources = resources

    async def list(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await self.resources.list_resources(ctx))

    async def read(self, ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await self.resources.read_resource(ctx, str(params.uri))
