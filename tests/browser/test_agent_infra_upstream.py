"""The public ``@agent-infra/mcp-server-browser`` aggregated by the gateway exactly as the seed
describes for the AIO image (``EXTRA_MCP_SERVERS='{"browser":{"url":"http://127.0.0.1:N/mcp"}}'``,
no prefix): its page-level ``browser_*`` tools join the catalogue after the built-ins, and calls to
them are forwarded to it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.headless_chromium import pages_app
from tests.support.jsonrpc import call_tool, list_tool_names, tool_text
from tests.support.requirements import npm_installed, require_chromium
from tests.support.servers import free_port, serve_app, wait_http

pytestmark = pytest.mark.chromium
PACKAGE = "@agent-infra/mcp-server-browser@1.2.29"
BUILTIN_BROWSER_TOOLS = ["browser_get_info", "browser_gui_screenshot", "browser_gui_execute_action"]


def installed_server() -> Path:
    """The package's command, installed once into the test cache."""
    command = npm_installed(PACKAGE, PACKAGE.replace("/", "_").replace("@", "")) / ".bin" / "mcp-server-browser"
    assert command.exists(), f"npm install {PACKAGE} gave no mcp-server-browser command"
    return command


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    chromium = require_chromium()
    command = installed_server()
    port = free_port()
    args = [
        str(command),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--headless",
        "--executable-path",
        chromium,
        "--viewport-size",
        "1280,720",
    ]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/mcp", timeout=60, expect=None)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        kill_tree(server)


def kill_tree(server: subprocess.Popen) -> None:
    """Kill the server's process group and the group of each child it started: Puppeteer launches
    Chromium detached, in a group of its own. (SIGTERM would take the server ten seconds.)"""
    groups = {server.pid}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid, pgrp = (int(field) for field in stat.read_text().rsplit(")", 1)[1].split()[1:3])
            if ppid == server.pid:
                groups.add(pgrp)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    server.wait()


@pytest.fixture(scope="module")
def pages_url() -> Iterator[str]:
    with serve_app(pages_app()) as url:
        yield url


@pytest.fixture
def mcp_url(tmp_path: Path, upstream_url: str) -> Iterator[str]:
    """A real gateway with the package registered as the AIO image registers it."""
    settings = replace(
        GatewaySettings.from_env({}), skills_path=tmp_path, mcp_servers={"browser": {"url": upstream_url}}
    )
    with serve_app(build_app(settings)) as url:
        yield f"{url}/mcp"


def test_its_tools_join_the_catalogue_after_the_builtins(mcp_url: str) -> None:
    names = list_tool_names(mcp_url)
    first_upstream = names.index("browser_navigate")
    assert set(BUILTIN_BROWSER_TOOLS) <= set(names[:first_upstream])
    upstream = names[first_upstream:]
    assert {
        "browser_navigate",
        "browser_screenshot",
        "browser_click",
        "browser_get_text",
        "browser_evaluate",
        "browser_tab_list",
        "browser_press_key",
    } <= set(upstream)
    assert all(name.startswith("browser_") for name in upstream)
    assert len(names) == len(set(names))


def test_browser_navigate_is_forwarded(mcp_url: str, pages_url: str) -> None:
    navigated = call_tool(mcp_url, "browser_navigate", {"url": f"{pages_url}/color/teal"}, timeout=120)
    assert not navigated.get("isError"), navigated
    assert "teal" in tool_text(navigated)
    title = call_tool(mcp_url, "browser_evaluate", {"script": "() => document.title"}, timeout=60)
    assert not title.get("isError"), title
    assert "teal" in tool_text(title)
