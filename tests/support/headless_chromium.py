"""Browser tests' support: Debian's Chromium, headless, with its DevTools endpoint on a loopback
port (its whole process group stopped after), test pages to serve on 127.0.0.1, and a
Playwright view of the page on display."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import pytest
from playwright.sync_api import Page, sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentbox_gateway.settings import GatewaySettings
from tests.support.requirements import require_chromium
from tests.support.servers import free_port, wait_http

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@dataclass(frozen=True)
class Chromium:
    port: int
    process: subprocess.Popen

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def headless_chromium(port: int | None = None, window: tuple[int, int] = (1280, 800)) -> Iterator[Chromium]:
    """Start Chromium with CDP on ``port`` (a free one by default); wait until it answers."""
    executable = require_chromium()
    port = port or free_port()
    profile = tempfile.mkdtemp(prefix="agentbox-chromium-")
    args = [
        executable,
        *FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-address=127.0.0.1",
        f"--remote-debugging-port={port}",
        f"--window-size={window[0]},{window[1]}",
        "about:blank",
    ]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/json/version", timeout=30)
        yield Chromium(port, process)
    finally:
        stop(process)
        shutil.rmtree(profile, ignore_errors=True)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def stop(process: subprocess.Popen) -> None:
    """End Chromium's whole process group and wait until it is gone (the Debian wrapper does not
    exec, so the browser is a child; its port must be free again before a restart on it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)
    deadline = time.monotonic() + 10
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


# -- test pages ------------------------------------------------------------------------------------

#: Elements at fixed CSS positions (device pixel ratio 1, so screenshot pixels too); every input
#: event the page sees is recorded in ``window.log``.
FORM_PAGE = """<!doctype html><html><head><title>form</title><style>
body { margin: 0; height: 3000px; background: #fff; }
#go { position: absolute; left: 40px; top: 40px; width: 200px; height: 60px; }
#name { position: absolute; left: 40px; top: 140px; width: 300px; height: 40px; font-size: 20px; }
#target { position: absolute; left: 400px; top: 40px; width: 200px; height: 100px; background: #ddd; }
#pad { position: absolute; left: 400px; top: 200px; width: 300px; height: 200px; background: #eee; }
</style></head><body>
<button id="go"
 onclick="window.clicks = (window.clicks || 0) + 1; document.title = 'clicked ' + window.clicks">Go</button>
<input id="name">
<div id="target"></div><div id="pad"></div>
<script>
window.log = [];
const record = (e) => window.log.push({type: e.type, x: e.clientX, y: e.clientY, button: e.button,
  buttons: e.buttons, detail: e.detail, target: e.target.id, key: e.key, code: e.code,
  shift: e.shiftKey, ctrl: e.ctrlKey});
for (const type of ["click", "dblclick", "contextmenu", "mousedown", "mouseup", "keydown", "keyup"])
  document.addEventListener(type, record);
document.getElementById("pad").addEventListener("mousemove", record);
document.addEventListener("contextmenu", (e) => e.preventDefault());
</script></body></html>"""


def _color_page(request: Request) -> HTMLResponse:
    color = request.path_params["color"]
    return HTMLResponse(f"<!doctype html><title>{color}</title><body style='margin:0;background:{color}'>")


def pages_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/form", lambda request: HTMLResponse(FORM_PAGE)),
            Route("/color/{color}", _color_page),
        ]
    )


@contextlib.contextmanager
def shown_page(cdp_url: str, url: str) -> Iterator[Page]:
    """A new tab at ``url``, brought to the front (the page the display shows), closed after;
    driven with Playwright connected straight to Chromium, to set up and inspect page state."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(cdp_url)
        page = browser.contexts[0].new_page()
        try:
            page.goto(url)
            page.bring_to_front()
            yield page
        finally:
            with contextlib.suppress(Exception):
                page.close()
            browser.close()


def keyed_chromium_settings(key: str) -> Callable[..., GatewaySettings]:
    """A module's ``gateway_settings`` override (assign it to that name): the module's gateway drives
    its shared headless Chromium, behind the API key ``key``."""

    @pytest.fixture(name="gateway_settings")
    def settings(gateway_settings: GatewaySettings, chromium: Chromium) -> GatewaySettings:
        return replace(gateway_settings, cdp_url=chromium.cdp_url, api_key=key)

    return settings
