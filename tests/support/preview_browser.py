"""What the browser tests of previews share (issue 26, item 1): the page a previewed app serves
(tests/support/evil_preview.html, whose script tries every way to act as the person on the
gateway), what the person's own dashboard page must still do, and the checks."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from tests.support.requirements import require_chromium

EVIL_PAGE = Path(__file__).resolve().parent / "evil_preview.html"
#: Chromium as the tests run it (Debian's, no GPU, nothing fetched in the background).
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: Run in the dashboard page: what the person's own page can do (read, mint a ticket, exec, open a terminal).
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
  return { sandbox: sandbox.success, ticket: ticket.success, exec: (exec.data && exec.data.output) || "", opened };
}"""


@contextlib.contextmanager
def browser_context() -> Iterator[BrowserContext]:
    """A fresh context of Debian's Chromium (headless), closed after."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=FLAGS)
        try:
            yield browser.new_context()
        finally:
            browser.close()


def open_dashboard(context: BrowserContext, base: str, key: str | None) -> Page:
    """The dashboard at ``base``, signed in with ``key`` when there is one, its terminal connected."""
    page = context.new_page()
    page.goto(f"{base}/")
    if key:
        page.fill("#key", key)
        page.press("#key", "Enter")
    expect(page.locator("#terminal-state")).to_have_text("connected", timeout=30_000)
    return page


def assert_dashboard_can(page: Page) -> None:
    own = page.evaluate(DASHBOARD_CAN)
    assert own["sandbox"] and own["ticket"] and own["opened"] and "dashboard-42" in own["exec"], own


def attempts_of(page: Page) -> list[dict[str, Any]]:
    """What the evil page's script tried and got, once it is done."""
    page.wait_for_function("document.title === 'done'", timeout=90_000)
    results: list[dict[str, Any]] = page.evaluate("window.agentboxResults")
    assert len(results) >= 10, results
    return results


def assert_all_failed(results: list[dict[str, Any]]) -> None:
    for result in results:
        assert not result.get("read") and not result.get("opened"), result


def open_from_dashboard(context: BrowserContext, dashboard: Page, port: int) -> Page:
    """Click the dashboard's preview link of ``port``; the tab it opens."""
    link = dashboard.locator(f'#preview-list a[data-port="{port}"]')
    expect(link).to_be_visible(timeout=30_000)
    with context.expect_page() as opened:
        link.click()
    return opened.value


def open_both_ways(
    context: BrowserContext, gateway: str, key: str | None, port: int
) -> tuple[Page, Page, list[dict[str, Any]]]:
    """The person's dashboard (asserted able to act), the app on ``port`` through the sandboxed path
    form (every attempt asserted failed), then opened from the dashboard on its own origin: the
    dashboard, that preview page and what its script tried, for the caller's own checks."""
    dashboard = open_dashboard(context, gateway, key)
    assert_dashboard_can(dashboard)
    path_form = context.new_page()
    path_form.goto(f"{gateway}/proxy/{port}/?tag=path")
    assert_all_failed(attempts_of(path_form))
    preview = open_from_dashboard(context, dashboard, port)
    return dashboard, preview, attempts_of(preview)
