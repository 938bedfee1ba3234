"""MCP Apps (``io.modelcontextprotocol/ui``, SEP-1865): the live view, the terminal and the previews
as ``ui://`` resources a host renders in a sandboxed frame, beside the result of the tool that opens
them (``browser_get_info``, ``sandbox_open_terminal``, ``sandbox_get_context``).

A view's HTML is served inline (``text/html;profile=mcp-app``) with the ext-apps bridge it needs (the
``ui/initialize`` handshake, the tool result the host sends it) written in; everything else it loads
(noVNC's modules, xterm.js, the WebSockets, a preview) comes from the gateway, under the view grant
the tool's result carries in its ``_meta`` (:mod:`...auth.views`). So its CSP metadata names the
gateway's own origin only, as the caller reaches it, and nothing of another origin.

The SDK's ``mcp.server.apps.Apps`` binds static resources to tools of its high-level ``MCPServer``;
the gateway's low-level server builds these per request (their CSP names the caller's address of
the gateway), so it uses the SDK's identifiers and CSP model and publishes them itself."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp import types
from mcp.server import ServerRequestContext
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp
from mcp.shared.exceptions import MCPError
from starlette.requests import HTTPConnection
from starlette.types import Scope

from ...auth.views import view_root
from ..shared.addresses import request_public_base

#: The extension as the server declares it (``capabilities.extensions``): no settings.
EXTENSIONS: dict[str, dict[str, Any]] = {EXTENSION_ID: {}}
#: The key of a tool result's ``_meta`` that carries what its view needs: ``base`` (the gateway as
#: the caller reaches it), ``root`` (``/apps/<token>``: the view grant) and ``expires_in``; a
#: preview result's ``previews`` (``[{port, root}]``) instead of ``root``.
VIEW_META = "agentbox/view"
LIVE_VIEW_URI = "ui://agentbox/live-view.html"
TERMINAL_URI = "ui://agentbox/terminal.html"
PREVIEW_URI = "ui://agentbox/preview.html"
_VIEWS_DIR = Path(__file__).with_name("views")
#: Where each view's HTML has the bridge written in.
_BRIDGE_MARK = "/*agentbox-bridge*/"


@dataclass(frozen=True)
class View:
    uri: str
    name: str
    title: str
    description: str
    file: str
    #: Whether it frames a page of the gateway (a preview), so it asks for ``frame-src`` too.
    frames: bool = False


VIEWS = (
    View(
        LIVE_VIEW_URI,
        "live-view",
        "Browser live view",
        "The sandbox's browser, live (noVNC over the gateway): what browser_get_info describes.",
        "live-view.html",
    ),
    View(
        TERMINAL_URI,
        "terminal",
        "Terminal",
        "An interactive shell in the sandbox (xterm.js over the gateway's terminal socket).",
        "terminal.html",
    ),
    View(
        PREVIEW_URI,
        "preview",
        "App previews",
        "The apps listening in the sandbox (sandbox_get_context's previews), each through /proxy/<port>/.",
        "preview.html",
        frames=True,
    ),
)
_BY_URI = {view.uri: view for view in VIEWS}


def tool_meta(uri: str) -> dict[str, Any]:
    """A tool's ``_meta`` opening the view ``uri``: the model may call it, and so may the view (its
    Reconnect calls it again for a fresh grant); the flat ``ui/resourceUri`` too, which hosts from
    before the extension's release read."""
    return {"ui": {"resourceUri": uri, "visibility": ["model", "app"]}, "ui/resourceUri": uri}


def result_meta(base: str, expires_in: float, **fields: Any) -> dict[str, Any]:
    """A tool result's ``_meta`` handing its view ``fields`` (a ``root`` or ``previews``)."""
    return {VIEW_META: {"base": base.rstrip("/"), "expires_in": int(expires_in), **fields}}


@cache
def _html(file: str) -> str:
    bridge = (_VIEWS_DIR / "bridge.js").read_text(encoding="utf-8")
    return (_VIEWS_DIR / file).read_text(encoding="utf-8").replace(_BRIDGE_MARK, bridge, 1)


def _origins(public_base: str) -> tuple[str, str]:
    """The gateway's origin as the caller reaches it, over HTTP and over WebSocket."""
    parts = urlsplit(public_base)
    secure = parts.scheme == "https"
    return f"{parts.scheme}://{parts.netloc}", f"{'wss' if secure else 'ws'}://{parts.netloc}"


def ui_meta(view: View, public_base: str) -> dict[str, Any]:
    """``_meta.ui`` of a view's resource: the CSP domains (the gateway's origin only) and a border."""
    http, ws = _origins(public_base)
    csp = ResourceCsp(
        connect_domains=[http, ws], resource_domains=[http], frame_domains=[http] if view.frames else None
    )
    return {"ui": {"csp": csp.model_dump(by_alias=True, exclude_none=True), "prefersBorder": True}}


class AppViews:
    """The views as the MCP server's resources (see ``agentbox_common.mcp_tools.Resources``)."""

    def __init__(self, fallback_base: str) -> None:
        #: The gateway's configured address, for a request naming no host.
        self.fallback_base = fallback_base

    def _base(self, ctx: ServerRequestContext[Any, Any]) -> str:
        request = ctx.request if isinstance(ctx.request, HTTPConnection) else None
        return request_public_base(request, self.fallback_base) if request is not None else self.fallback_base

    async def list_resources(self, ctx: ServerRequestContext[Any, Any]) -> list[types.Resource]:
        base = self._base(ctx)
        return [
            types.Resource(
                uri=view.uri,
                name=view.name,
                title=view.title,
                description=view.description,
                mime_type=APP_MIME_TYPE,
                meta=ui_meta(view, base),
            )
            for view in VIEWS
        ]

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], uri: str) -> types.ReadResourceResult:
        view = _BY_URI.get(uri)
        if view is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource: {uri}", {"uri": uri})  # SEP-2164
        content = types.TextResourceContents(
            uri=view.uri, mime_type=APP_MIME_TYPE, text=_html(view.file), meta=ui_meta(view, self._base(ctx))
        )
        return types.ReadResourceResult(contents=[content])


def open_view(result: types.CallToolResult, scope: Scope | None, base: str, ttl: float, prefix: str) -> None:
    """Hand ``result``'s view a grant for ``prefix`` (its ``_meta``), for the caller of ``scope``:
    nothing without a request or when ``prefix`` is beyond the caller's credential."""
    root = view_root(scope, prefix)
    if root is not None:
        result.meta = {**(result.meta or {}), **result_meta(base, ttl, root=root)}


def open_previews(result: types.CallToolResult, scope: Scope | None, base: str, ttl: float, ports: list[int]) -> None:
    """Hand ``result``'s preview view a grant for each port's ``/proxy/<port>/``."""
    granted = [{"port": port, "root": root} for port in ports if (root := view_root(scope, f"/proxy/{port}/"))]
    if granted:
        result.meta = {**(result.meta or {}), **result_meta(base, ttl, previews=granted)}
