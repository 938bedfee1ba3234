"""The dashboard's terminal is a durable ``/v2/pty`` session (issue 29): a page reload reattaches to
the same shell, with its recent output replayed, instead of starting a new one; another tab gets a
shell of its own. In a real Chromium (Playwright + Debian's Chromium) against a bare gateway."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.support.browser_pages import browser_context

pytestmark = [pytest.mark.chromium, pytest.mark.usefixtures("own_home")]


@pytest.fixture
def context(gateway: str) -> Iterator[BrowserContext]:
    with browser_context(gateway) as (context, recorder):
        yield context
        assert recorder.foreign == [], recorder.foreign


def sessions(gateway: str) -> list[dict[str, Any]]:
    listed = httpx.get(f"{gateway}/v2/pty/sessions", timeout=30).json()["data"]["sessions"]
    assert isinstance(listed, list)
    return listed


def type_line(page: Page, line: str) -> None:
    page.locator("#terminal").click()
    page.keyboard.type(line)
    page.keyboard.press("Enter")


def test_a_reload_reattaches_to_the_same_shell(gateway: str, context: BrowserContext) -> None:
    page = context.new_page()
    page.goto(f"{gateway}/")
    expect(page.locator("#terminal-state")).to_have_text("connected")
    rows = page.locator("#terminal .xterm-rows")
    type_line(page, "export BEFORE_RELOAD=kept-$((6*7)); echo set-$BEFORE_RELOAD")
    expect(rows).to_contain_text("set-kept-42")
    [before] = sessions(gateway)
    assert before["attached"] is True and before["session_id"].startswith("dashboard-")

    page.reload()
    expect(page.locator("#terminal-state")).to_have_text("connected")
    expect(rows).to_contain_text("set-kept-42")  # the replay of what the terminal showed
    type_line(page, 'echo "after=[$BEFORE_RELOAD]"')
    expect(rows).to_contain_text("after=[kept-42]")
    [after] = sessions(gateway)
    assert (after["session_id"], after["pid"]) == (before["session_id"], before["pid"])
    assert after["attached"] is True

    other = context.new_page()  # a tab of its own: its own shell
    other.goto(f"{gateway}/")
    expect(other.locator("#terminal-state")).to_have_text("connected")
    type_line(other, 'echo "other=[${BEFORE_RELOAD:-unset}]"')
    expect(other.locator("#terminal .xterm-rows")).to_contain_text("other=[unset]")
    assert len(sessions(gateway)) == 2


def test_a_reload_after_the_shell_ended_starts_a_new_one(gateway: str, context: BrowserContext) -> None:
    page = context.new_page()
    page.goto(f"{gateway}/")
    expect(page.locator("#terminal-state")).to_have_text("connected")
    [first] = sessions(gateway)
    type_line(page, "exit 3")
    expect(page.locator("#terminal-state")).to_have_text("shell exited (3)")
    page.reload()
    expect(page.locator("#terminal-state")).to_have_text("connected")
    type_line(page, "echo fresh-$((2+3))")
    expect(page.locator("#terminal .xterm-rows")).to_contain_text("fresh-5")
    [second] = sessions(gateway)
    assert second["session_id"] != first["session_id"]
