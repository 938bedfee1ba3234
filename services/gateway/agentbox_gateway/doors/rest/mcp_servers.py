"""REST door of the MCP catalogue, as the agent-sandbox SDK's ``mcp`` client calls it:
``GET /v1/mcp/servers``, ``GET /v1/mcp/{server}/tools``, ``POST /v1/mcp/{server}/tools/{tool}``.

The gateway's built-in tools are one server (``sandbox``), each aggregated upstream another, under
the names ``/mcp`` publishes; listing and calling go through the same registry and upstream router
as ``/mcp``, so both doors show and do the same thing."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Request

from agentbox_common.errors import NotFound, Unavailable

from ...upstreams import UpstreamRouter
from ...upstreams.client import UpstreamRpcError
from ..mcp.tools.registry import BuiltinRegistry, ToolContext
from .envelope import RestError, error_responses, ok

#: The server name of the gateway's own tools.
BUILTIN_SERVER = "sandbox"


def router(registry: BuiltinRegistry, upstreams: UpstreamRouter) -> APIRouter:
    api = APIRouter(prefix="/v1/mcp", tags=["mcp"], responses=error_responses(400, 404, 502, 503))
    reserved = set(registry.names)

    def check_server(server: str) -> None:
        if server != BUILTIN_SERVER and server not in upstreams.names:
            known = ", ".join([BUILTIN_SERVER, *upstreams.names])
            raise NotFound(f"no MCP server {server!r}", hint=f"servers: {known}")

    @api.get("/servers")
    async def list_servers() -> dict[str, Any]:
        """``sandbox`` (the built-in tools), then every registered upstream in registration order."""
        return ok([BUILTIN_SERVER, *(name for name in upstreams.names if name != BUILTIN_SERVER)])

    @api.get("/{server}/tools")
    async def list_tools(server: str) -> dict[str, Any]:
        """``{tools: [...]}`` as ``tools/list`` publishes them (an upstream that does not answer: 503)."""
        check_server(server)
        if server == BUILTIN_SERVER:
            tools = registry.tools()
        else:
            published = await upstreams.list_tools(reserved)
            tools = [tool for tool in published if _owner(upstreams, tool.name) == server]
            if not tools and not upstreams.health().get(server, False):
                raise Unavailable(f"MCP server {server!r} does not answer")
        return ok({"tools": [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]})

    @api.post("/{server}/tools/{tool}")
    async def call_tool(
        request: Request,
        server: str,
        tool: str,
        arguments: dict[str, Any] = Body(default_factory=dict),  # noqa: B008
    ) -> dict[str, Any]:
        """The ``tools/call`` result (``content``, ``isError``…); a tool that ran and failed is
        ``success: false`` with the result in ``data``."""
        check_server(server)
        if server == BUILTIN_SERVER:
            if tool not in registry:
                raise NotFound(f"unknown tool: {tool}")
            answer = await registry.call(tool, arguments, ToolContext(request=request))
            result = answer.model_dump(by_alias=True, exclude_none=True, mode="json")
        else:
            route = upstreams.route(tool)
            if route is None or route.client.name != server:
                raise NotFound(f"unknown tool: {tool}", hint=f"GET /v1/mcp/{server}/tools lists them")
            try:
                result = await upstreams.forward(route, arguments)
            except UpstreamRpcError as exc:
                raise RestError(400, f"{server} refused the call: {exc}", data=exc.error) from None
        if result.get("isError"):
            text = next((item.get("text") for item in result.get("content", []) if item.get("type") == "text"), "")
            return {"success": False, "message": text or f"{tool} failed", "data": result, "hint": None}
        return ok(result)

    return api


def _owner(upstreams: UpstreamRouter, published: str) -> str | None:
    route = upstreams.route(published)
    return route.client.name if route is not None else None
