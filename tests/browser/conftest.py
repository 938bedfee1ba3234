"""The browser program as a real subprocess (``agentbox-browser`` on free ports for MCP and CDP, real
Chromium) and a small site for it to browse, served by the tests on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.jsonrpc import rpc
from tests.support.png import decode_png
from tests.support.requirements import require_chromium
from tests.support.servers import console_script, free_port, run_command, serve_app

VIEWPORT = (1024, 640)
NAV_TIMEOUT = 3.0


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><title>{title}</title>"
        f"<style>body{{font-family:sans-serif}}</style></head><body>{body}</body></html>"
    )


async def home(request: Request) -> HTMLResponse:
    return _page(
        "Home",
        """
      <h1>Welcome home</h1>
      <p>This is the <strong>home</strong> page.</p>
      <ul><li>first item</li><li>second item</li></ul>
      <a href="/form">Search form</a>
      <a href="/long">Long page</a>
      <a href="/slowish" target="_blank">Open in a new tab</a>
      <button id="counter" onclick="this.textContent = 'clicked ' + (++window.clicks)">Count</button>
      <button style="display:none">Invisible button</button>
      <div style="display:none">secret hidden text</div>
      <div id="hover-target" onmouseover="document.title = 'hovered'">Hover me</div>
      <script>window.clicks = 0; var ignoredScript = 'script text';</script>
    """,
    )


async def form(request: Request) -> HTMLResponse:
    return _page(
        "Form",
        """
      <h1>Search form</h1>
      <form action="/result" method="get">
        <input id="q" name="q" placeholder="Query">
        <input id="prefilled" name="prefilled" value="old">
        <select id="color" name="color">
          <option value="red">Red</option><option value="green">Green</option>
        </select>
        <button type="submit">Search</button>
      </form>
    """,
    )


async def result(request: Request) -> HTMLResponse:
    params = request.query_params
    return _page(
        "Result",
        f"<h1>Result</h1><p id='echo'>q={params.get('q')} color={params.get('color')} "
        f"prefilled={params.get('prefilled')}</p>",
    )


async def long_page(request: Request) -> HTMLResponse:
    return _page("Long", "<h1>Top</h1><div style='height:5000px'>tall</div><p id='bottom'>Bottom</p>")


async def reloading(request: Request) -> HTMLResponse:
    return _page(
        "Reloading",
        "<p>Reloading page</p>"
        # sessionStorage.stop (kept across the reloads) ends them; window.reloading: one is under way.
        "<script>addEventListener('load', () => setTimeout(() => sessionStorage.stop || "
        "(window.reloading = true, location.reload()), 50));"
        "</script>",
    )


async def slowish(request: Request) -> HTMLResponse:
    await asyncio.sleep(0.5)
    return _page("Slowish", "<p>popup content</p>")


async def slow(request: Request) -> HTMLResponse:
    await asyncio.sleep(NAV_TIMEOUT + 3)
    return _page("Slow", "<p>finally</p>")


SITE = Starlette(
    routes=[
        Route("/", home),
        Route("/form", form),
        Route("/result", result),
        Route("/long", long_page),
        Route("/slow", slow),
        Route("/slowish", slowish),
        Route("/reloading", reloading),
    ]
)


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the test site."""
    with serve_app(SITE) as url:
        yield url


@dataclass
class BrowserProgram:
    base_url: str
    cdp_port: int
    process: subprocess.Popen

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """``tools/call`` as the seed's curl does it; returns the JSON-RPC result (isError or not)."""
        response = rpc(self.mcp_url, "tools/call", {"name": name, "arguments": arguments or {}}, timeout=60)
        assert response.status_code == 200, response.text
        payload = response.json()
        assert "error" not in payload, payload
        return payload["result"]

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool that must succeed; returns its first text block."""
        result = self.call(name, arguments)
        assert not result.get("isError"), result
        return result["content"][0]["text"]

    def error(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        """Call a tool that must fail with an isError result; returns its text."""
        result = self.call(name, arguments)
        assert result.get("isError") is True, result
        return result["content"][0]["text"]

    def health(self) -> dict[str, Any]:
        return httpx.get(f"{self.base_url}/health", timeout=5).json()

    def wait_chromium(self, state: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.health()["chromium"] != state:
            assert time.monotonic() < deadline, f"chromium never became {state!r}"
            time.sleep(0.02)

    def chromium_pids(self) -> list[int]:
        """The Chromium browser process(es) started for this program (found by their CDP port)."""
        flag = f"--remote-debugging-port={self.cdp_port}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    args = handle.read().split(b"\0")
                if flag in args and not any(arg.startswith(b"--type=") for arg in args):
                    found.append(int(entry))
        return found

    def kill_chromium(self) -> None:
        """SIGKILL Chromium's whole process group, as a crash or the OOM killer would."""
        pids = self.chromium_pids()
        assert len(pids) == 1, pids
        os.killpg(os.getpgid(pids[0]), signal.SIGKILL)


def _two_ports() -> tuple[int, int]:
    first = free_port()
    second = free_port()
    while second == first:
        second = free_port()
    return first, second


@contextlib.contextmanager
def start_program(extra_env: dict[str, str] | None = None) -> Iterator[BrowserProgram]:
    chromium = require_chromium()
    port, cdp_port = _two_ports()
    base_url = f"http://127.0.0.1:{port}"
    env = {
        "AGENTBOX_BROWSER_PORT": str(port),
        "AGENTBOX_CDP_PORT": str(cdp_port),
        "AGENTBOX_CHROMIUM": chromium,
        "AGENTBOX_VIEWPORT": f"{VIEWPORT[0]}x{VIEWPORT[1]}",
        "AGENTBOX_NAV_TIMEOUT": str(NAV_TIMEOUT),
        "LOG_LEVEL": "WARNING",  # nobody reads the pipe while the tests run
        **(extra_env or {}),
    }
    with run_command(
        [console_script("agentbox-browser")], env=env, ready_url=f"{base_url}/health", timeout=60
    ) as process:
        program = BrowserProgram(base_url, cdp_port, process)
        program.wait_chromium("running")
        yield program


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserProgram]:
    """One browser program per test module."""
    with start_program() as program:
        yield program


def png_size(data_base64: str) -> tuple[int, int]:
    """Width and height of a well-formed PNG (chunks and CRCs checked, image data inflated)."""
    png = decode_png(base64.b64decode(data_base64), rows=1)
    return png.width, png.height


@pytest.fixture(scope="module")
def gateway(browser: BrowserProgram, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real gateway whose page plane is this module's browser program."""
    skills = tmp_path_factory.mktemp("skills")
    settings = replace(GatewaySettings.from_env({}), skills_path=skills, browser_url=browser.base_url)
    with serve_app(build_app(settings)) as url:
        yield url
