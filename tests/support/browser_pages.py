"""A real browser for page tests: Debian's Chromium launched by Playwright (a fresh profile, so
no cookies), every request it makes recorded, and anything not sent to the page's own origin
refused as an air-gapped machine would."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import BrowserContext, Route, sync_playwright

from tests.support.requirements import require_chromium


@dataclass
class Recorder:
    origin: str
    urls: list[str] = field(default_factory=list)

    @property
    def foreign(self) -> list[str]:
        """Requests to anything but the gateway (``data:`` URLs are the page's own)."""
        return [url for url in self.urls if not url.startswith(("data:", "blob:")) and _origin(url) != self.origin]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return f"{scheme}://{parts.netloc}"


@contextlib.contextmanager
def browser_context(origin: str) -> Iterator[tuple[BrowserContext, Recorder]]:
    """A new Chromium context recording every request; requests leaving ``origin`` are aborted."""
    recorder = Recorder(origin)

    def gate(route: Route) -> None:
        if _origin(route.request.url) == origin or route.request.url.startswith("data:"):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_chromium(), args=["--no-sandbox"])
        try:
            context = browser.new_context(accept_downloads=True)
            context.on("request", lambda request: recorder.urls.append(request.url))
            context.on("page", lambda page: page.on("websocket", lambda socket: recorder.urls.append(socket.url)))
            context.route("**/*", gate)
            yield context, recorder
        finally:
            browser.close()


def status_elsewhere(context: BrowserContext, url: str) -> int:
    """The status ``url`` loads with in a new context of ``context``'s browser, one without its
    cookies: a one-use ticket URL the first page load spent answers 401 there."""
    assert context.browser is not None
    again = context.browser.new_context()
    try:
        response = again.new_page().goto(url)
        assert response is not None
        return response.status
    finally:
        again.close()
