"""The pages a person opens: the dashboard (``/``, ``/index.html``) and its assets (``/static/``),
Swagger UI at ``/v1/docs`` and ``/v2/docs`` (one surface each, both listed on either) and the
agents' manual ``/llms.txt``. Every asset comes from the
gateway's package data (xterm.js and Swagger UI vendored from npm, under ``static/vendor/``):
nothing from another origin, so the pages work air-gapped. All of them sit behind the same guard as the API."""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ...planes.status import READY
from ...settings import GatewaySettings
from ..mcp.tools.registry import BuiltinRegistry

STATIC_DIR = Path(__file__).with_name("static")
_NO_STORE = {"cache-control": "no-store"}


@cache
def _dashboard_template() -> str:
    return (STATIC_DIR / "index.html").read_text(encoding="utf-8")


def dashboard_html(keyed: bool, home: str) -> str:
    """The dashboard page, told whether the gateway has a key (sign-out button, MCP snippet's
    header), where the file browser starts and which capability ``status`` means up."""
    attributes = f'<body data-auth="{"key" if keyed else "open"}" data-home="{html.escape(home)}" data-ready="{READY}">'
    return _dashboard_template().replace("<body>", attributes, 1)


def manual(registry: BuiltinRegistry, settings: GatewaySettings) -> str:
    """``/llms.txt``: what an agent needs to use this sandbox, in plain text."""
    tools = "\n".join(
        f"- {tool.name}: {(tool.description or '').strip().splitlines()[0] if tool.description else ''}"
        for tool in registry.tools()
    )
    auth = (
        "This gateway requires its API key (AIO_API_KEY) on every route but /health, /v1/ping,\n"
        "/v1/openapi.json and /v2/openapi.json."
        if settings.api_key
        else "This gateway has no API key set: every route is open to whoever can reach it (loopback by default)."
    )
    return f"""# agentbox

> A self-hosted all-in-one sandbox for AI agents: shell, code, files and a Chromium browser, over
> MCP (streamable HTTP at /mcp) and an AIO-Sandbox-compatible REST API (/v1/*), one port.

## Auth

{auth}
- Programs: send `Authorization: Bearer <AIO_API_KEY>` (or `X-API-Key`).
- People in a browser: open `/`, sign in with the key once; an HttpOnly session cookie does the rest.
- A URL for someone without a session (a live-view link you hand a person): `POST /tickets` with the
  key, body `{{"path": "/vnc/"}}` (optional), answers `data.ticket`; append `?ticket=<ticket>` to a URL
  under that path. A ticket works once, within {int(settings.ticket_ttl)} seconds (AIO_TICKET_TTL), and
  signs that browser in. Never put the key itself in a URL.
- Previews of apps you start (sandbox_get_context lists them): a person opens `preview_url`, the app on
  an origin of its own (http://<port>.localhost:<gateway port>/); with a key set, `POST /tickets/preview`
  with {{"port": 3000}} answers `data.url`, a link good once for that port. Programs use /proxy/<port>/
  or send the key in X-AIO-API-Key on the preview host (Authorization there is the app's).

## MCP

Connect an MCP client to `/mcp` (streamable HTTP). Built-in tools:

{tools}

Tools of registered upstream MCP servers (EXTRA_MCP_SERVERS) are listed with their own prefix.

## REST (AIO Sandbox compatible, envelope {{"success", "message", "data", "hint"}})

- Shell: POST /v1/shell/exec, /v1/shell/view, /v1/shell/wait, /v1/shell/write, /v1/shell/kill,
  /v1/bash/exec; interactive terminal: WebSocket GET /v1/shell/ws (binary frames are terminal
  bytes both ways; a text frame {{"type": "resize", "cols": N, "rows": M}} resizes).
- Files: POST /v1/file/read, /v1/file/write, /v1/file/replace, /v1/file/search, /v1/file/find,
  /v1/file/grep, /v1/file/glob, /v1/file/list, /v1/file/str_replace_editor, /v1/file/upload
  (multipart); GET /v1/file/download?path=<absolute path>.
- Code: POST /v1/code/execute, /v1/jupyter/execute, /v1/nodejs/execute.
- Browser: GET /v1/browser/info (cdp_url, vnc_url), /v1/browser/screenshot; CDP for Playwright or
  Puppeteer at /cdp (connect_over_cdp("<base>/cdp"); the discovery routes /json/version, /json,
  /json/list and /json/protocol also at the root, where Puppeteer's browserURL looks).
- Sandbox: GET /v1/sandbox (context), /v1/capabilities (which programs are up), /health.
- Full list: /v1/openapi.json; human-readable: /v1/docs.
- /v2 (aiod's surface): POST /v2/commands (command_id; GET /v2/commands/{{id}} reads output by
  offset; NDJSON with Accept: application/x-ndjson), /v2/commands/sessions, GET /v2/sandbox;
  list: /v2/openapi.json, /v2/docs. AIO_API_SURFACE=v2 serves only /v2 and /mcp.

## Pages

- /            dashboard: live view, terminal, files, program status, MCP snippet
- /vnc/         live view of the browser's display (when the image runs one; the client is /vnc/index.html)
- /terminal/    the terminal alone (GET /v1/shell/terminal-url answers its URL, with a ticket)
- /v1/docs     Swagger UI
"""


#: What each surface's document describes, for the docs pages' list of both.
SURFACE_TITLES = {
    "v1": "/v1: AIO 1.x compatible (the agent-sandbox SDK)",
    "v2": "/v2: aiod (commands, sandbox, browser alias)",
}


def _surface_nav(surfaces: tuple[str, ...]) -> str:
    """The list of both surfaces atop a docs page: each a link to its page and its document."""
    items = "".join(
        f'<li><a href="../{s}/docs">{html.escape(SURFACE_TITLES[s])}</a> '
        f'(<a href="../{s}/openapi.json">openapi.json</a>)</li>'
        for s in surfaces
    )
    return f'<nav class="api-surfaces" aria-label="API surfaces"><ul>{items}</ul></nav>'


def routes(registry: BuiltinRegistry, settings: GatewaySettings) -> list[BaseRoute]:
    keyed = bool(settings.api_key)
    text = manual(registry, settings)

    async def dashboard(request: Request) -> Response:
        return HTMLResponse(dashboard_html(keyed, str(Path.home())), headers=_NO_STORE)

    async def llms_txt(request: Request) -> Response:
        return PlainTextResponse(text)

    surfaces = ("v2",) if settings.api_surface == "v2" else ("v1", "v2")

    async def docs(request: Request) -> Response:
        from fastapi.openapi.docs import get_swagger_ui_html  # here: FastAPI loads with the REST door

        # Relative URLs: /v1/docs resolves them under /v1/, also behind a reverse-proxy prefix.
        page = get_swagger_ui_html(
            openapi_url="openapi.json",
            title="agentbox API",
            swagger_js_url="../static/vendor/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url="../static/vendor/swagger-ui/swagger-ui.css",
            swagger_favicon_url="data:,",
            swagger_ui_parameters={"validatorUrl": None},
        )
        html_text = (
            bytes(page.body)
            .decode()
            .replace('<div id="swagger-ui">', _surface_nav(surfaces) + '<div id="swagger-ui">', 1)
        )
        return HTMLResponse(html_text)

    return [
        Route("/", dashboard, methods=["GET"]),
        Route("/index.html", dashboard, methods=["GET"]),
        Route("/llms.txt", llms_txt, methods=["GET"]),
        *(Route(f"/{surface}/docs", docs, methods=["GET"]) for surface in surfaces),
        Mount("/static", app=StaticFiles(directory=str(STATIC_DIR)), name="static"),
    ]
