"""Chromium's DevTools discovery routes at the gateway's root, where clients look for them: the real
``puppeteer-core`` from npm resolves ``/json/version`` against ``browserURL``'s origin (so
``browserURL: "<gateway>/cdp"`` asks ``<gateway>/json/version``), and Playwright given the bare
gateway address asks ``/json/version/`` there. Behind the same key as ``/cdp/``."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import sync_playwright

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.headless_chromium import Chromium
from tests.support.requirements import npm_installed, require_npm
from tests.support.servers import serve_app

pytestmark = pytest.mark.chromium
PACKAGE = "puppeteer-core@24.43.1"
KEY = "cdp-discovery-key-2b7e"
AUTH = {"Authorization": f"Bearer {KEY}"}
#: Generous: the first call to a route the REST door serves builds it, slow on a loaded machine.
GET = functools.partial(httpx.get, timeout=60)
#: Connects as its arguments say (``browserURL <url>`` or ``ws <url> <key>``), opens a page, runs
#: a script in it and prints what it answered.
SCRIPT = """
const puppeteer = require("puppeteer-core");
const [how, url, key] = process.argv.slice(1);
(async () => {
  const browser = how === "browserURL"
    ? await puppeteer.connect({ browserURL: url })
    : await puppeteer.connect({ browserWSEndpoint: url, headers: { Authorization: `Bearer ${key}` } });
  const page = await browser.newPage();
  await page.goto("data:text/html,<title>through the gateway</title>");
  console.log(JSON.stringify({ title: await page.title(), sum: await page.evaluate(() => 6 * 7) }));
  await page.close();
  await browser.disconnect();
})().catch((error) => { console.error(error.message); process.exit(1); });
"""


def installed_puppeteer() -> Path:
    """``node_modules`` holding puppeteer-core, installed once into the test cache."""
    return npm_installed(PACKAGE, PACKAGE.replace("@", "-"), ignore_scripts=True)


def puppeteer(*args: str) -> subprocess.CompletedProcess[str]:
    node = str(Path(require_npm()).with_name("node"))
    env = {**os.environ, "NODE_PATH": str(installed_puppeteer())}
    return subprocess.run([node, "-e", SCRIPT, *args], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def open_gateway(gateway_settings: GatewaySettings, chromium: Chromium) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, cdp_url=chromium.cdp_url))) as url:
        yield url


@pytest.fixture
def keyed_gateway(gateway_settings: GatewaySettings, chromium: Chromium) -> Iterator[str]:
    with serve_app(build_app(replace(gateway_settings, cdp_url=chromium.cdp_url, api_key=KEY))) as url:
        yield url


def test_puppeteer_connects_with_the_usual_browser_url(open_gateway: str) -> None:
    for browser_url in (f"{open_gateway}/cdp", open_gateway):
        done = puppeteer("browserURL", browser_url)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"title": "through the gateway", "sum": 42}


def test_with_a_key_puppeteer_uses_the_socket_address_and_its_header(keyed_gateway: str) -> None:
    """Puppeteer sends neither ``headers`` nor ``browserURL``'s query with its discovery request, so
    a keyed gateway refuses it; the socket address from ``/cdp/json/version`` with the header works."""
    refused = puppeteer("browserURL", f"{keyed_gateway}/cdp?api_key={KEY}")
    assert refused.returncode == 1 and f"{keyed_gateway}/json/version" in refused.stderr
    assert "401" in refused.stderr or "Unauthorized" in refused.stderr
    socket_url = GET(f"{keyed_gateway}/json/version", headers=AUTH).json()["webSocketDebuggerUrl"]
    done = puppeteer("ws", socket_url, KEY)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sum"] == 42


def test_the_root_discovery_routes_are_behind_the_key(keyed_gateway: str, chromium: Chromium) -> None:
    authority = keyed_gateway.removeprefix("http://")
    direct = GET(f"{chromium.cdp_url}/json/version").json()
    for path in ("/json/version", "/json/version/"):
        assert GET(keyed_gateway + path).status_code == 401
        version = GET(keyed_gateway + path, headers=AUTH).json()
        assert version["Browser"] == direct["Browser"]
        assert version["webSocketDebuggerUrl"].startswith(f"ws://{authority}/cdp/devtools/browser/")
    for path in ("/json", "/json/list", "/json/list/"):
        targets = GET(keyed_gateway + path, headers=AUTH).json()
        pages = [t for t in targets if t["type"] == "page"]
        assert pages and all(t["webSocketDebuggerUrl"].startswith(f"ws://{authority}/cdp/devtools/") for t in pages)
    assert "domains" in GET(f"{keyed_gateway}/json/protocol", headers=AUTH).json()
    # the key in the URL: answered with single-use tickets, never the key
    signed = GET(f"{keyed_gateway}/json/version?api_key={KEY}").json()["webSocketDebuggerUrl"]
    assert "?ticket=" in signed and KEY not in signed
    assert GET(f"{keyed_gateway}/json/new", headers=AUTH).status_code == 404  # discovery only


def test_playwright_connects_to_the_bare_gateway_address(keyed_gateway: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(keyed_gateway, headers=AUTH, timeout=20_000)
        try:
            page = browser.contexts[0].new_page()
            page.goto("data:text/html,<title>bare address</title>")
            assert page.title() == "bare address"
            page.close()
        finally:
            browser.close()
