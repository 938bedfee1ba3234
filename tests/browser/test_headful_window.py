"""Issue 28 item 11: the image's Chromium, headful on a display as in the live view, shows no
"unsupported command-line flag: --no-sandbox" bar over the page (it takes 56 px off the page, so
the window's chrome (tabs and toolbar, about 90 px) grows to about 145 px)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import replace

from playwright.sync_api import sync_playwright

from agentbox_browser.chromium import chromium_command
from agentbox_browser.settings import BrowserSettings
from tests.support.headless_chromium import stop
from tests.support.requirements import require_chromium, require_program
from tests.support.servers import free_port, stop_group, wait_http

#: The most the window's own chrome may take above the page without an infobar under it.
MAX_CHROME = 115


def test_no_infobar_over_the_page() -> None:
    xvfb = subprocess.Popen(
        [require_program("Xvfb", "xvfb"), "-displayfd", "1", "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    profile = tempfile.mkdtemp(prefix="agentbox-headful-")
    try:
        assert xvfb.stdout is not None
        display = f":{xvfb.stdout.readline().decode().strip()}"
        port = free_port()
        settings = replace(BrowserSettings.from_env({}), chromium=require_chromium(), headless=False, cdp_port=port)
        chromium = subprocess.Popen(
            chromium_command(settings, profile),
            env={"DISPLAY": display, "PATH": "/usr/bin:/bin", "HOME": profile},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_http(f"http://127.0.0.1:{port}/json/version", timeout=30)
            with sync_playwright() as playwright:
                browser = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
                page = browser.contexts[0].pages[0]
                page.wait_for_timeout(1500)  # the bar comes in after the first paint
                outer, inner = page.evaluate("[outerHeight, innerHeight]")
                browser.close()
        finally:
            stop(chromium)
    finally:
        stop_group(xvfb, grace=5)
        shutil.rmtree(profile, ignore_errors=True)
    assert outer - inner <= MAX_CHROME, f"{outer - inner} px above the page: an infobar is showing"
