"""Issue 26's done-when for previews, in the image and a real Chromium: an app the agent starts in the
sandbox serves a page whose script tries to read ``/v1/sandbox``, run ``/v1/shell/exec``, mint a
ticket (``POST /tickets``) and open ``/v1/shell/ws`` on the gateway. Opened through the preview
origin (``http://3000.localhost:<port>/``, from the dashboard's Previews list) and through the path
form (``/proxy/3000/``, sandboxed), every attempt fails, while the person's own dashboard page still
does all of it; with a key and without one."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from tests.support.jsonrpc import call_tool, tool_json, tool_text
from tests.support.requirements import require_chromium

from .dockerbox import Box, running_box

pytestmark = [pytest.mark.docker, pytest.mark.chromium]
KEY = "preview-origin-e2e-key-41c7"
APP_PORT = 3000
EVIL = (Path(__file__).resolve().parents[1] / "support" / "evil_preview.html").read_bytes()
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DASHBOARD_CAN = """async () => {
  const sandbox = await fetch("v1/sandbox").then((r) => r.json());
  const ticket = await fetch("tickets", { method: "POST" }).then((r) => r.json());
  const exec = await fetch("v1/shell/exec", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ command: "echo dashboard-$((6*7))" }) }).then((r) => r.json());
  const opened = await new Promise((resolve) => {
    const ws = new WebSocket(new URL("v1/shell/ws", location.href.replace(/^http/, "ws")));
    ws.onopen = () => { ws.close(); resolve(true); };
    ws.onerror = () => resolve(false);
  });
  return { sandbox: sandbox.success, ticket: ticket.success, exec: exec.data && exec.data.output, opened };
}"""


def start_app(box: Box, headers: dict[str, str]) -> None:
    """The page, served by ``python3 -m http.server`` started the way an agent starts a dev server."""
    url = box.url(8091, "/mcp")
    encoded = base64.b64encode(EVIL).decode()
    command = (
        f"mkdir -p /tmp/evil && echo {encoded} | base64 -d > /tmp/evil/index.html && "
        f"(setsid nohup python3 -m http.server {APP_PORT} --bind 127.0.0.1 --directory /tmp/evil "
        ">/tmp/evil.log 2>&1 &); "
        f"for i in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:{APP_PORT}/ && echo serving && break; "
        "sleep 0.1; done"
    )
    served = call_tool(url, "sandbox_execute_bash", {"cmd": command, "timeout": 30}, headers=headers)
    assert "serving" in tool_json(served)["output"], tool_text(served)


@pytest.fixture(scope="module", params=["keyed", "key-less"])
def served(request: pytest.FixtureRequest, docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    env = {"AIO_API_KEY": KEY} if request.param == "keyed" else {}
    with running_box(docker_client, agentbox_image, env) as box:
        start_app(box, {"Authorization": f"Bearer {KEY}"} if env else {})
        yield box


@pytest.fixture
def context() -> Iterator[BrowserContext]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        try:
            yield browser.new_context()
        finally:
            browser.close()


def keyed(box: Box) -> bool:
    return "AIO_API_KEY=" + KEY in box.container.attrs["Config"]["Env"]


def open_dashboard(context: BrowserContext, box: Box) -> Page:
    page = context.new_page()
    page.goto(box.url(8091, "/"))
    if keyed(box):
        page.fill("#key", KEY)
        page.press("#key", "Enter")
    expect(page.locator("#terminal-state")).to_have_text("connected", timeout=30_000)
    return page


def attempts_of(page: Page) -> list[dict[str, Any]]:
    page.wait_for_function("document.title === 'done'", timeout=90_000)
    results: list[dict[str, Any]] = page.evaluate("window.agentboxResults")
    assert len(results) >= 10, results
    return results


def assert_all_failed(results: list[dict[str, Any]]) -> None:
    for result in results:
        assert not result.get("read") and not result.get("opened"), result


def assert_nothing_ran(box: Box) -> None:
    code, output = box.exec("ls /tmp/pwned-* 2>/dev/null | wc -l")
    assert code == 0 and output.strip() == "0", output


def test_a_previewed_page_cannot_act_as_the_person(served: Box, context: BrowserContext) -> None:
    dashboard = open_dashboard(context, served)
    own = dashboard.evaluate(DASHBOARD_CAN)
    assert own == {"sandbox": True, "ticket": True, "exec": own["exec"], "opened": True}
    assert "dashboard-42" in own["exec"]

    path_form = context.new_page()
    path_form.goto(served.url(8091, f"/proxy/{APP_PORT}/?tag=path"))
    assert_all_failed(attempts_of(path_form))

    link = dashboard.locator(f'#preview-list a[data-port="{APP_PORT}"]')
    expect(link).to_be_visible(timeout=30_000)
    with context.expect_page() as opened:
        link.click()
    preview = opened.value
    results = attempts_of(preview)
    gateway_port = served.ports[8091]
    assert preview.url == f"http://{APP_PORT}.localhost:{gateway_port}/"  # the ticket is gone from the URL
    assert_all_failed(results)
    own_origin = [r for r in results if r["url"].startswith(f"http://{APP_PORT}.localhost")]
    assert own_origin and all(r["status"] in (404, 501) for r in own_origin if r["name"] != "ws"), own_origin
    assert_nothing_ran(served)

    # The dashboard still works after all that; and with a key a stranger's browser is not let in.
    again = dashboard.evaluate(DASHBOARD_CAN)
    assert again["sandbox"] and again["ticket"] and again["opened"]
    if keyed(served):
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["agentbox_preview"]["domain"] == f"{APP_PORT}.localhost"
        assert cookies["agentbox_preview"]["httpOnly"] and cookies["agentbox_preview"]["sameSite"] == "Lax"
        stranger = context.browser.new_context() if context.browser else None
        assert stranger is not None
        try:
            page = stranger.new_page()
            response = page.goto(f"http://{APP_PORT}.localhost:{gateway_port}/")
            assert response is not None and response.status == 401
            expect(page.locator("h1")).to_contain_text("needs permission")
        finally:
            stranger.close()
