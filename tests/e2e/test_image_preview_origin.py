"""Issue 26's done-when for previews, in the image and a real Chromium: an app the agent starts in the
sandbox serves a page whose script tries to read ``/v1/sandbox``, run ``/v1/shell/exec``, mint a
ticket (``POST /tickets``) and open ``/v1/shell/ws`` on the gateway. Opened through the preview
origin (``http://3000.localhost:<port>/``, from the dashboard's Previews list) and through the path
form (``/proxy/3000/``, sandboxed), every attempt fails, while the person's own dashboard page still
does all of it; with a key and without one."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import docker
import pytest
from playwright.sync_api import BrowserContext, expect

from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.preview_browser import (
    EVIL_PAGE,
    assert_all_failed,
    assert_dashboard_can,
    browser_context,
    open_both_ways,
)

from .dockerbox import Box, running_box

pytestmark = [pytest.mark.docker, pytest.mark.chromium]
KEY = "preview-origin-e2e-key-41c7"
APP_PORT = 3000


def start_app(box: Box, headers: dict[str, str]) -> None:
    """The page, served by ``python3 -m http.server`` started the way an agent starts a dev server."""
    encoded = base64.b64encode(EVIL_PAGE.read_bytes()).decode()
    command = (
        f"mkdir -p /tmp/evil && echo {encoded} | base64 -d > /tmp/evil/index.html && "
        f"(setsid nohup python3 -m http.server {APP_PORT} --bind 127.0.0.1 --directory /tmp/evil "
        ">/tmp/evil.log 2>&1 &); "
        f"for i in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:{APP_PORT}/ && echo serving && break; "
        "sleep 0.1; done"
    )
    served = call_tool(box.url(8091, "/mcp"), "sandbox_execute_bash", {"cmd": command, "timeout": 30}, headers=headers)
    assert "serving" in tool_json(served)["output"], tool_text(served)


@pytest.fixture(scope="module", params=["keyed", "key-less"])
def served(request: pytest.FixtureRequest, docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    env = {"AIO_API_KEY": KEY} if request.param == "keyed" else {}
    with running_box(docker_client, agentbox_image, env) as box:
        start_app(box, {"Authorization": f"Bearer {KEY}"} if env else {})
        yield box


@pytest.fixture
def context() -> Iterator[BrowserContext]:
    with browser_context() as fresh:
        yield fresh


def test_a_previewed_page_cannot_act_as_the_person(served: Box, context: BrowserContext) -> None:
    key = KEY if f"AIO_API_KEY={KEY}" in served.container.attrs["Config"]["Env"] else None
    gateway = served.url(8091)
    dashboard, preview, results = open_both_ways(context, gateway, key, APP_PORT)
    origin = f"http://{APP_PORT}.localhost:{served.ports[8091]}"
    assert preview.url == f"{origin}/"  # on its own origin, the ticket gone from the URL
    assert_all_failed(results)
    own = [r for r in results if r["url"].startswith(origin) and r["name"] != "ws"]
    assert own and all(r["status"] in (404, 501) for r in own), own  # its own paths are the app's
    code, output = served.exec("ls /tmp/pwned-* 2>/dev/null | wc -l")
    assert code == 0 and output.strip() == "0", output

    assert_dashboard_can(dashboard)  # the person's own page still can
    if key:
        cookie = {c["name"]: c for c in context.cookies()}["agentbox_preview"]
        assert cookie["domain"] == f"{APP_PORT}.localhost" and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
        assert context.browser is not None
        stranger = context.browser.new_context()
        try:
            page = stranger.new_page()
            response = page.goto(f"{origin}/")
            assert response is not None and response.status == 401
            expect(page.locator("h1")).to_contain_text("needs permission")
        finally:
            stranger.close()
