"""The page plane as the gateway reaches it: the browser program runs Playwright and owns the page
operations (shared with its MCP page tools); this client calls them over its loopback page door
(``POST <AGENTBOX_BROWSER_URL>/page/{operation}``), as the gateway already calls that program's
``/mcp`` for the aggregated page tools."""

from __future__ import annotations

import functools
from typing import Any

import httpx

from agentbox_common.http import plain_http_only

from .errors import BrowserProgramUnavailable, PageFailed
from .launch import BrowserLauncher


class PagePlane:
    def __init__(self, browser_url: str, launcher: BrowserLauncher, timeout: float) -> None:
        self.browser_url = browser_url.rstrip("/")
        self._launcher = launcher
        self._timeout = timeout

    @functools.cached_property
    def _http(self) -> httpx.AsyncClient:
        """Made on first use: a client's transport imports httpcore and h11 (some 50 ms of start-up)."""
        return httpx.AsyncClient(
            base_url=self.browser_url,
            timeout=httpx.Timeout(self._timeout, connect=3.0),
            trust_env=False,
            verify=plain_http_only(),
        )

    async def aclose(self) -> None:
        if "_http" in self.__dict__:
            await self._http.aclose()

    async def call(self, operation: str, arguments: dict[str, Any] | None = None) -> Any:
        """The operation's data; :class:`PageFailed` or :class:`BrowserProgramUnavailable` otherwise
        (the browser started first, or waited for while it starts)."""
        await self._launcher.ensure()
        try:
            response = await self._http.post(f"/page/{operation}", json=arguments or {})
        except httpx.HTTPError as exc:
            raise BrowserProgramUnavailable(
                f"the browser program at {self.browser_url} did not answer ({type(exc).__name__})"
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or ("data" not in body and "error" not in body):
            raise BrowserProgramUnavailable(
                f"the browser program at {self.browser_url} has no page door (HTTP {response.status_code})"
            )
        if response.status_code != 200:
            raise PageFailed(response.status_code, str(body.get("error", "")))
        return body["data"]
