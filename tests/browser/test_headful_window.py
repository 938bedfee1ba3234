"""Issue 28 item 11: the image's Chromium, headful on a display as in the live view, shows no
"unsupported command-line flag: --no-sandbox" bar over the page (it takes 56 px off the page, so
the window's chrome (tabs and toolbar, about 90 px) grows to about 145 px)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace

from playwright.sync_api import sync_playwright

from agentbox_browser.chromium import chromium_command
from agentbox_browser.settings import BrowserSettings
from tests.support.display import chromium_on, xvfb_display
from tests.support.requirements import require_chromium
from tests.support.servers import free_port

#: The most the window's own chrome may take above the page without an infobar under it.
MAX_CHROME = 115


def test_no_infobar_over_the_page() -> None:
    with xvfb_display() as display:
        profile = tempfile.mkdtemp(prefix="agentbox-headful-")
        try:
            port = free_port()
            settings = replace(BrowserSettings.from_env({}), chromium=require_chromium(), headless=False, cdp_port=port)
            with chromium_on(display, chromium_command(settings, profile), profile, port) as cdp_url:
                with sync_playwright() as playwright:
                    browser = playwright.chromium.connect_over_cdp(cdp_url)
                    page = browser.contexts[0].pages[0]
                    page.wait_for_timeout(1500)  # the bar comes in after the first paint
                    outer, inner = page.evaluate("[outerHeight, innerHeight]")
                    browser.close()
        finally:
            shutil.rmtree(profile, ignore_errors=True)
    assert outer - inner <= MAX_CHROME, f"{outer - inner} px above the page: an infobar is showing"
