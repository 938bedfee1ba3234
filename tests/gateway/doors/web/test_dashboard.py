"""The dashboard, its terminal and file browser, Swagger UI and the login form, in a real Chromium
(Playwright + Debian's Chromium) against a bare gateway: nothing is fetched from another origin
(requests leaving the gateway are aborted, as on an air-gapped machine)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from agent_sandbox import Sandbox
from playwright.sync_api import Page, expect

from agentbox_gateway.app import build_app
from agentbox_gateway.planes.status import READY, STATUSES
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.browser_pages import browser_context, status_elsewhere
from tests.support.headless_chromium import Chromium
from tests.support.servers import console_script, free_port, run_command, serve_app, stop_group

pytestmark = [pytest.mark.chromium, pytest.mark.usefixtures("own_home")]
KEY = "dashboard-browser-key-5f1e2d"


@pytest.fixture
def page(gateway: str) -> Iterator[Page]:
    with browser_context(gateway) as (context, recorder):
        page = context.new_page()
        yield page
        assert recorder.foreign == [], recorder.foreign


def test_the_dashboard_loads_everything_from_the_gateway(gateway: str, page: Page) -> None:
    page.goto(f"{gateway}/")
    expect(page.locator("#status-list li").first).to_contain_text("Shell: ")
    expect(page.locator("#terminal-state")).to_have_text("connected")
    expect(page.locator("#live-unavailable")).to_contain_text("Live view unavailable")
    expect(page.locator("#mcp-snippet")).to_contain_text(f"{gateway}/mcp")
    assert page.evaluate("document.body.dataset.auth") == "open"


def test_a_ready_browser_shows_as_healthy(gateway_settings: GatewaySettings, chromium: Chromium) -> None:
    """Every row the capability report calls ``ready`` (the browser's word for a working
    Chromium) is drawn up (green), and an absent one down."""
    with serve_app(build_app(replace(gateway_settings, cdp_url=chromium.cdp_url))) as url:
        report = shared_http.get(f"{url}/v1/capabilities", timeout=60).json()["data"]
        assert {report[name]["status"] for name in ("exec", "code_interpreter", "browser")} <= set(STATUSES)
        assert report["browser"]["status"] == READY
        with browser_context(url) as (context, recorder):
            page = context.new_page()
            page.goto(f"{url}/")
            browser_row = page.locator("#status-list li", has_text="Browser:")
            expect(browser_row).to_have_class("up")
            expect(page.locator("#status-list li", has_text="Shell:")).to_have_class("up")
            assert recorder.foreign == []
    with serve_app(build_app(replace(gateway_settings, cdp_url=f"http://127.0.0.1:{free_port()}"))) as url:
        with browser_context(url) as (context, _):
            page = context.new_page()
            page.goto(f"{url}/")
            expect(page.locator("#status-list li", has_text="Browser:")).to_have_class("down")


def test_typing_echo_into_the_terminal_shows_its_output(gateway: str, page: Page) -> None:
    page.goto(f"{gateway}/index.html")
    expect(page.locator("#terminal-state")).to_have_text("connected")
    page.locator("#terminal").click()
    page.keyboard.type("echo dashboard-$((6*7))")
    page.keyboard.press("Enter")
    expect(page.locator("#terminal .xterm-rows")).to_contain_text("dashboard-42")


def test_the_terminal_fills_its_panel(gateway: str, page: Page) -> None:
    """Issue 28 item 11: the dashboard's terminal spans the page (at 1280 px, over 120 columns, so a
    typed command line does not wrap) and follows the window's size."""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{gateway}/")
    expect(page.locator("#terminal-state")).to_have_text("connected")
    page.wait_for_function("window.agentboxTerminal.cols >= 120")
    assert page.evaluate("window.agentboxTerminal.rows") >= 20
    line = "echo " + "x" * 100
    page.locator("#terminal").click()
    page.keyboard.type(line)
    expect(page.locator("#terminal .xterm-rows")).to_contain_text(line)  # one row holds it whole
    page.set_viewport_size({"width": 1600, "height": 900})
    page.wait_for_function("window.agentboxTerminal.cols >= 160")


_EXEC_STATUS = """async () => (await fetch("/v1/shell/exec", {method: "POST",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify({command: "echo no"})})).status"""


def test_the_sdks_terminal_url_opens_a_terminal_and_nothing_else(gateway_settings: GatewaySettings) -> None:
    """``shell.get_terminal_url()`` on a keyed gateway: a fresh browser opens it, types a command and
    sees its output; the session its ticket signed in cannot call the API."""
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        sdk = Sandbox(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
        terminal_url = sdk.shell.get_terminal_url().data
        assert isinstance(terminal_url, str) and terminal_url.startswith(f"{url}/terminal/?ticket=")
        assert KEY not in terminal_url
        with browser_context(url) as (context, recorder):
            page = context.new_page()
            page.goto(terminal_url)
            expect(page.locator("#terminal-state")).to_have_text("connected")
            page.locator("#terminal").click()
            page.keyboard.type("echo standalone-$((6*7))")
            page.keyboard.press("Enter")
            expect(page.locator("#terminal .xterm-rows")).to_contain_text("standalone-42")
            assert page.evaluate(_EXEC_STATUS) == 401
            assert page.goto(f"{url}/").status == 401  # the dashboard is not the terminal's scope
            assert recorder.foreign == []
            assert status_elsewhere(context, terminal_url) == 401  # the ticket was used up by the first page load
        forwarded = shared_http.get(
            f"{url}/v1/shell/terminal-url",
            headers={"Authorization": f"Bearer {KEY}", "X-Forwarded-Host": "box.example", "X-Forwarded-Prefix": "/s/2"},
        ).json()["data"]
        assert forwarded.startswith("http://box.example/s/2/terminal/?ticket=")


def test_the_file_browser_lists_views_downloads_and_uploads(gateway: str, page: Page, tmp_path: Path) -> None:
    payload = os.urandom(4096) + b"\x00\xff end"
    (tmp_path / "agent-wrote.bin").write_bytes(payload)
    (tmp_path / "notes.txt").write_text("hello from the agent\n")
    page.goto(f"{gateway}/?path={tmp_path}")
    row = page.locator("#file-list tr", has_text="agent-wrote.bin")
    expect(row).to_be_visible()
    with page.expect_download() as download:
        row.locator("a.download").click()
    assert Path(download.value.path()).read_bytes() == payload
    page.locator("#file-list button", has_text="notes.txt").click()
    expect(page.locator("#file-view")).to_have_text("hello from the agent\n")
    upload = tmp_path / "outside" / "from-person.txt"
    upload.parent.mkdir()
    upload.write_bytes(b"uploaded by a person")
    page.set_input_files("#file-upload", str(upload))
    expect(page.locator("#file-list tr", has_text="from-person.txt").first).to_be_visible()
    assert (tmp_path / "from-person.txt").read_bytes() == b"uploaded by a person"


def test_swagger_ui_renders_offline(gateway: str, page: Page) -> None:
    page.goto(f"{gateway}/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("agentbox sandbox API")
    expect(page.locator(".opblock-summary-path", has_text="/v1/shell/exec").first).to_be_visible()


def test_llms_txt_is_a_plain_text_manual(gateway: str) -> None:
    manual = shared_http.get(f"{gateway}/llms.txt")
    assert manual.headers["content-type"].startswith("text/plain")
    for expected in ("/mcp", "sandbox_execute_bash", "browser_get_info", "/v1/shell/ws", "POST /tickets"):
        assert expected in manual.text, expected


def test_sign_in_in_a_browser_and_the_key_is_never_in_html_urls_or_logs(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"AIO_API_KEY": KEY, "AIO_SKILLS_PATH": str(tmp_path), "HOME": os.environ["HOME"]}
    with run_command(
        [console_script("aiod"), "start", "--port", str(port)], env=env, ready_url=f"{base}/health"
    ) as process:
        with browser_context(base) as (context, recorder):
            page = context.new_page()
            pages: list[str] = []
            page.on(
                "response",
                lambda r: pages.append(r.text()) if "text/html" in r.headers.get("content-type", "") else None,
            )
            page.goto(f"{base}/")
            page.fill("#key", "wrong")
            page.press("#key", "Enter")
            expect(page.locator(".error")).to_contain_text("not right")
            page.fill("#key", KEY)
            page.press("#key", "Enter")
            expect(page.locator("#terminal-state")).to_have_text("connected")
            [session] = [c for c in context.cookies() if c["name"] == "agentbox_session"]
            assert session["httpOnly"] and session["sameSite"] == "Strict"
            page.locator("#terminal").click()
            page.keyboard.type("echo signed-$((2*21))")
            page.keyboard.press("Enter")
            expect(page.locator("#terminal .xterm-rows")).to_contain_text("signed-42")
            (tmp_path / "seen.txt").write_text("listed")
            page.fill("#file-path", str(tmp_path))
            page.click("#file-nav button[type=submit]")
            expect(page.locator("#file-list tr", has_text="seen.txt")).to_be_visible()
            page.goto(f"{base}/v1/docs")
            expect(page.locator(".swagger-ui .info .title")).to_contain_text("agentbox sandbox API")
            ticket = shared_http.post(f"{base}/tickets", headers={"Authorization": f"Bearer {KEY}"}).json()["data"]
            fresh = context.browser.new_context()
            try:
                other = fresh.new_page()
                other.goto(f"{base}/?ticket={ticket['ticket']}")
                expect(other.locator("#terminal-state")).to_have_text("connected")
                other.goto(f"{base}/?ticket={ticket['ticket']}")
                expect(other.locator("#terminal-state")).to_have_text("connected")  # the cookie, not the ticket
                reused = fresh.browser.new_context()
                try:
                    stranger = reused.new_page()
                    stranger.goto(f"{base}/?ticket={ticket['ticket']}")
                    expect(stranger.locator("#key")).to_be_visible()
                finally:
                    reused.close()
            finally:
                fresh.close()
            assert recorder.foreign == []
            assert not [url for url in recorder.urls if KEY in url]
            assert pages and not [text for text in pages if KEY in text]
        page_html = shared_http.get(f"{base}/", headers={"Authorization": f"Bearer {KEY}"}).text
        assert KEY not in page_html
        stop_group(process)
        log = process.stdout.read().decode(errors="replace") if process.stdout else ""
    assert "Started server process" in log and KEY not in log
