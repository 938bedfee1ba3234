"""MCP Apps (``io.modelcontextprotocol/ui``) through the official client: the tools that open a view
carry ``_meta.ui.resourceUri``, the ``ui://`` resources read as ``text/html;profile=mcp-app`` with
CSP metadata naming the gateway's own origin only, and the view grant a result carries opens its
view's prefix, from another origin, and nothing else."""

from __future__ import annotations

import copy
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp.types import TextResourceContents

from agentbox_gateway.app import build_app
from agentbox_gateway.doors.mcp.apps import LIVE_VIEW_URI, PREVIEW_URI, TERMINAL_URI, VIEW_META
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.jsonrpc import MODERN_META, call_tool, modern_headers, rpc
from tests.support.servers import free_port, run_command, serve_app

pytestmark = pytest.mark.anyio
KEY = "apps-key-5eed"
FOREIGN = {"Origin": "http://127.0.0.1:9"}  # a host's frame on another loopback port


@pytest.fixture(params=["keyed", "open"])
def apps_gateway(request: pytest.FixtureRequest, gateway_settings: GatewaySettings) -> Iterator[tuple[str, str]]:
    """The gateway with and without a key: its URL and the key ("" without)."""
    key = KEY if request.param == "keyed" else ""
    with serve_app(build_app(replace(gateway_settings, api_key=key))) as url:
        yield url, key


@pytest.fixture
async def client(apps_gateway: tuple[str, str]) -> AsyncIterator[Client]:
    url, key = apps_gateway
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        apps = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), extensions=[apps]) as connected:
            yield connected


async def test_the_tools_that_open_a_view_name_its_resource(client: Client) -> None:
    extensions = client.server_capabilities.extensions
    assert extensions is None or extensions.get(EXTENSION_ID) == {}
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    opened = {name: (tool.meta or {}).get("ui", {}).get("resourceUri") for name, tool in tools.items()}
    assert opened["browser_get_info"] == LIVE_VIEW_URI
    assert opened["sandbox_open_terminal"] == TERMINAL_URI
    assert opened["sandbox_get_context"] == PREVIEW_URI
    assert opened["sandbox_execute_bash"] is None
    for name in ("browser_get_info", "sandbox_open_terminal", "sandbox_get_context"):
        meta = tools[name].meta or {}
        assert meta["ui"]["visibility"] == ["model", "app"] and meta["ui/resourceUri"] == opened[name]
    listed = {resource.uri: resource for resource in (await client.list_resources()).resources}
    assert set(listed) >= {LIVE_VIEW_URI, TERMINAL_URI, PREVIEW_URI}
    assert all(listed[uri].mime_type == APP_MIME_TYPE for uri in (LIVE_VIEW_URI, TERMINAL_URI, PREVIEW_URI))


async def test_a_view_reads_as_an_mcp_app_loading_only_from_the_gateway(
    client: Client, apps_gateway: tuple[str, str]
) -> None:
    url, _ = apps_gateway
    ws = url.replace("http://", "ws://")
    for uri, frames in ((LIVE_VIEW_URI, False), (TERMINAL_URI, False), (PREVIEW_URI, True)):
        [content] = (await client.read_resource(uri)).contents
        assert isinstance(content, TextResourceContents)
        assert content.mime_type == APP_MIME_TYPE
        assert content.text.startswith("<!doctype html>") and "ui/initialize" in content.text
        assert "://" not in content.text  # no address of its own: everything comes from the grant's base
        csp = (content.meta or {})["ui"]["csp"]
        assert csp["connectDomains"] == [url, ws] and csp["resourceDomains"] == [url]
        assert csp.get("frameDomains") == ([url] if frames else None)
    with pytest.raises(MCPError) as unknown:
        await client.read_resource("ui://agentbox/nothing.html")
    assert "unknown resource" in unknown.value.error.message


async def test_the_terminals_grant_opens_the_terminal_from_another_origin_and_nothing_else(
    client: Client, apps_gateway: tuple[str, str]
) -> None:
    url, key = apps_gateway
    result = await client.call_tool("sandbox_open_terminal", {})
    text = result.content[0].model_dump()["text"]
    assert f'"terminal_url":"{url}/terminal/' in text and (key == "" or "ticket=" in text)
    view = dict((result.meta or {})[VIEW_META])
    assert view["base"] == url and view["root"].startswith("/apps/") and view["expires_in"] > 0
    assert not key or key not in str(result.model_dump())
    root = url + view["root"]
    script = shared_http.get(f"{root}/terminal/static/terminal.js", headers=FOREIGN)
    assert script.status_code == 200 and "attachTerminal" in script.text
    assert script.headers["access-control-allow-origin"] == "*"
    # The grant is for /terminal/ alone: not the API, not the live view, not another token.
    assert shared_http.get(f"{root}/v1/sandbox", headers=FOREIGN).status_code == 401
    assert shared_http.get(f"{root}/vnc/index.html", headers=FOREIGN).status_code == 401
    assert shared_http.get(f"{url}/apps/{'x' * 43}/terminal/", headers=FOREIGN).status_code == 401
    # The same files from another origin without the grant are refused as ever.
    assert shared_http.get(f"{url}/terminal/static/terminal.js", headers=FOREIGN).status_code in (401, 403)


@pytest.fixture
def listening_app(tmp_path: Path) -> Iterator[int]:
    """An app listening in the sandbox (a process of its own, as an app the agent started): its port."""
    port = free_port()
    args = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)]
    with run_command(args, ready_url=f"http://127.0.0.1:{port}/"):
        yield port


async def test_previews_get_a_grant_each(client: Client, apps_gateway: tuple[str, str], listening_app: int) -> None:
    url, _ = apps_gateway
    port = listening_app
    result = await client.call_tool("sandbox_get_context", {})
    previews = [preview["port"] for preview in json.loads(result.content[0].model_dump()["text"])["previews"]]
    assert port in previews
    view = (result.meta or {})[VIEW_META]
    assert [preview["port"] for preview in view["previews"]] == previews
    granted = {preview["port"]: preview["root"] for preview in view["previews"]}
    assert len(set(granted.values())) == len(granted)  # a grant each
    # One port's grant opens its /proxy/<port>/ only.
    other = next(p for p in previews if p != port) if len(previews) > 1 else port + 1
    assert shared_http.get(f"{url}{granted[port]}/proxy/{other}/", headers=FOREIGN).status_code == 401
    # The app's own answer, on the gateway's origin, runs in an opaque origin: it can never act with the
    # person's cookie, nor reach past its grant (which mints nothing: /mcp is outside its prefix).
    page = shared_http.get(f"{url}{granted[port]}/proxy/{port}/", headers=FOREIGN)
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith("sandbox")
    mint = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sandbox_get_context"}}
    assert shared_http.post(f"{url}{granted[port]}/mcp", json=mint, headers=FOREIGN).status_code == 401


@pytest.mark.parametrize("key", ["", KEY])
def test_a_views_token_never_reaches_the_access_log(
    gateway_settings: GatewaySettings, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with (
        caplog.at_level(logging.INFO, logger="agentbox.access"),
        serve_app(build_app(replace(gateway_settings, api_key=key))) as url,
    ):
        root = call_tool(f"{url}/mcp", "sandbox_open_terminal", {}, headers=headers)["_meta"][VIEW_META]["root"]
        assert shared_http.get(f"{url}{root}/terminal/static/terminal.js", headers=FOREIGN).status_code == 200
    token = root.rsplit("/", 1)[1]
    logged = [record.getMessage() for record in caplog.records if record.name == "agentbox.access"]
    assert any("/terminal/static/terminal.js" in line for line in logged)
    assert not any(token in line for line in logged)


def test_a_grant_serves_every_request_of_its_view_until_it_expires(gateway_settings: GatewaySettings) -> None:
    skipped = [0.0]
    settings = replace(gateway_settings, api_key=KEY, ticket_ttl=30.0)
    with serve_app(build_app(settings, clock=lambda: time.monotonic() + skipped[0])) as url:
        result = call_tool(f"{url}/mcp", "sandbox_open_terminal", {}, headers={"Authorization": f"Bearer {KEY}"})
        view = result["_meta"][VIEW_META]
        assert view["expires_in"] == 30
        asset = f"{url}{view['root']}/terminal/static/terminal.js"
        assert [shared_http.get(asset, headers=FOREIGN).status_code for _ in range(3)] == [200, 200, 200]
        skipped[0] += 31
        expired = shared_http.get(asset, headers=FOREIGN)
        assert expired.status_code == 401 and "call the tool that opened the view again" in expired.json()["hint"]


def test_both_eras_are_told_of_the_views(gateway: str) -> None:
    """``server/discover`` (2026-07-28) declares the extension (SEP-2133); the handshake era, which has
    no extensions map (the SDK leaves it out there), is told of ``resources``, which the views are read
    through; Apps hosts of that era key on the tools' ``_meta.ui`` and their own capability."""
    url = f"{gateway}/mcp"
    discover = rpc(
        url, "server/discover", {"_meta": copy.deepcopy(MODERN_META)}, headers=modern_headers("", "server/discover")
    )
    assert discover.json()["result"]["capabilities"]["extensions"][EXTENSION_ID] == {}, discover.text
    assert "resources" in discover.json()["result"]["capabilities"]
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    handshake = rpc(url, "initialize", hello)
    assert "resources" in handshake.json()["result"]["capabilities"], handshake.text
