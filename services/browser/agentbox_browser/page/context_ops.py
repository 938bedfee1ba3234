"""Page-plane operations on the shared context rather than one page: network (extra headers, scoped
headers, mocked or aborted routes, the request log and its HAR export), storage state (save, load)
and CAPTCHA detection (reCAPTCHA, hCaptcha, Cloudflare Turnstile) with a wait until it is gone."""

from __future__ import annotations

import asyncio
import datetime
import fnmatch
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from playwright.async_api import BrowserContext, Route

from .. import __version__
from ..session import BrowserSession
from .errors import PageError, PageNotFound

Operation = Callable[[BrowserSession, dict[str, Any]], Awaitable[Any]]

#: What a challenge looks like: the providers' iframes and their widget containers.
_CAPTCHA_SCRIPT = """
() => {
  const KINDS = [
    ['recaptcha', /google\\.com\\/recaptcha|recaptcha\\.net\\/recaptcha/, '.g-recaptcha, #recaptcha'],
    ['hcaptcha', /hcaptcha\\.com/, '.h-captcha'],
    ['turnstile', /challenges\\.cloudflare\\.com/, '.cf-turnstile'],
  ];
  const shown = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0; };
  const found = [];
  for (const [kind, source, widget] of KINDS) {
    for (const frame of document.querySelectorAll('iframe')) {
      if (source.test(frame.src || '') && shown(frame)) found.push({type: kind, via: 'iframe', src: frame.src});
    }
    for (const element of document.querySelectorAll(widget)) {
      if (shown(element)) found.push({type: kind, via: 'widget', sitekey: element.dataset.sitekey || null});
    }
  }
  return found;
}
"""


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class ContextControls:
    """Per-context network state: scoped headers and the routes added, so they can be removed."""

    def __init__(self) -> None:
        self.context: BrowserContext | None = None
        self.scoped: dict[str, dict[str, str]] = {}
        self.routes: dict[str, Callable[[Route], Awaitable[None]]] = {}
        #: URL globs refused (``browser/restart``'s ``url_blocklist``), and the only ones allowed if any.
        self.blocked: list[str] = []
        self.allowed: list[str] = []

    async def bind(self, session: BrowserSession) -> BrowserContext:
        """The session's context; after a reconnect (a new Chromium) the old routes are gone too."""
        context = await session.context()
        if context is not self.context:
            self.context, self.scoped, self.routes = context, {}, {}
            await context.route("**/*", self._scoped_headers)
        return context

    def refused(self, url: str) -> bool:
        if not url.startswith(("http:", "https:", "ws:", "wss:")):
            return False
        if any(fnmatch.fnmatch(url, pattern) for pattern in self.blocked):
            return True
        return bool(self.allowed) and not any(fnmatch.fnmatch(url, pattern) for pattern in self.allowed)

    async def _scoped_headers(self, route: Route) -> None:
        if self.refused(route.request.url):
            await route.abort("blockedbyclient")
            return
        extra = self.scoped.get(_origin(route.request.url))
        if extra:
            await route.fallback(headers={**route.request.headers, **extra})
        else:
            await route.fallback()


CONTROLS = ContextControls()


async def set_headers(session: BrowserSession, args: dict[str, Any]) -> Any:
    context = await CONTROLS.bind(session)
    await context.set_extra_http_headers(args["headers"])
    return {"headers": sorted(args["headers"])}


async def set_scoped_headers(session: BrowserSession, args: dict[str, Any]) -> Any:
    origin = _origin(args["origin"])
    if not urlsplit(origin).netloc:
        raise PageError("origin must be scheme://host[:port]")
    await CONTROLS.bind(session)
    CONTROLS.scoped[origin] = dict(args["headers"])
    return {"origin": origin, "headers": sorted(args["headers"])}


async def add_route(session: BrowserSession, args: dict[str, Any]) -> Any:
    pattern, mock, abort = args["url_pattern"], args.get("response"), bool(args.get("abort"))
    if not abort and mock is None:
        raise PageError("give a response to mock or abort: true")
    context = await CONTROLS.bind(session)

    async def handle(route: Route) -> None:
        if abort or mock is None:
            await route.abort()
            return
        headers = dict(mock.get("headers") or {})
        await route.fulfill(
            status=mock.get("status") or 200,
            headers=headers,
            body=mock.get("body") or "",
            content_type=mock.get("content_type"),
        )

    previous = CONTROLS.routes.pop(pattern, None)
    if previous is not None:
        await context.unroute(pattern, previous)
    await context.route(pattern, handle)
    CONTROLS.routes[pattern] = handle
    return {"url_pattern": pattern, "abort": abort}


async def remove_route(session: BrowserSession, args: dict[str, Any]) -> Any:
    context = await CONTROLS.bind(session)
    handle = CONTROLS.routes.pop(args["url_pattern"], None)
    if handle is None:
        raise PageNotFound(f"no route for {args['url_pattern']!r}")
    await context.unroute(args["url_pattern"], handle)
    return {"removed": args["url_pattern"]}


def _public(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        key: entry[key]
        for key in ("id", "url", "method", "resource_type", "status", "mime_type", "failure", "started", "duration_ms")
    }


async def get_requests(session: BrowserSession, args: dict[str, Any]) -> Any:
    """The latest requests, oldest first; ``filter`` is a substring or glob of the URL."""
    wanted = args.get("filter")
    entries = [
        e for e in session.network.entries if not wanted or wanted in e["url"] or fnmatch.fnmatch(e["url"], wanted)
    ]
    limit = args.get("limit") or 100
    return [_public(e) for e in entries[-limit:]]


def _har_entry(entry: dict[str, Any]) -> dict[str, Any]:
    started = datetime.datetime.fromtimestamp(entry["started"], datetime.UTC).isoformat()
    duration = entry["duration_ms"] or 0
    return {
        "startedDateTime": started,
        "time": duration,
        "request": {
            "method": entry["method"],
            "url": entry["url"],
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in entry["request_headers"].items()],
            "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(entry["url"]).query)],
            "headersSize": -1,
            "bodySize": -1,
        },
        "response": {
            "status": entry["status"] or 0,
            "statusText": entry["status_text"],
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": k, "value": v} for k, v in entry["response_headers"].items()],
            "content": {"size": -1, "mimeType": entry["mime_type"]},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": duration, "receive": 0},
        **({"_failure": entry["failure"]} if entry["failure"] else {}),
    }


async def export_har(session: BrowserSession, args: dict[str, Any]) -> Any:
    target = Path(args["save_path"])
    entries = [_har_entry(e) for e in session.network.entries]
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "agentbox-browser", "version": __version__},
            "pages": [],
            "entries": entries,
        }
    }
    await asyncio.to_thread(_write_json, target, har)
    return {"path": str(target), "entries": len(entries)}


def _write_json(target: Path, value: Any) -> None:
    if not target.parent.is_dir():
        raise PageNotFound(f"no such directory: {target.parent}")
    target.write_text(json.dumps(value, indent=2, ensure_ascii=False))


def _read_json(source: Path) -> Any:
    if not source.is_file():
        raise PageNotFound(f"no such file: {source}")
    try:
        return json.loads(source.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise PageError(f"{source} is not a saved browser state ({exc})") from None


async def save_state(session: BrowserSession, args: dict[str, Any]) -> Any:
    state = await (await session.context()).storage_state()
    target = Path(args["path"])
    await asyncio.to_thread(_write_json, target, state)
    return {"path": str(target), "cookies": len(state["cookies"]), "origins": len(state["origins"])}


_LOCAL_STORAGE_SCRIPT = """
(state) => {
  const origin = state.find((entry) => entry.origin === location.origin);
  if (origin) for (const item of origin.localStorage) localStorage.setItem(item.name, item.value);
}
"""


async def load_state(session: BrowserSession, args: dict[str, Any]) -> Any:
    """Cookies at once; each origin's localStorage in its pages now and in those loaded later."""
    state = await asyncio.to_thread(_read_json, Path(args["path"]))
    if not isinstance(state, dict) or not isinstance(state.get("cookies"), list):
        raise PageError(f"{args['path']} is not a saved browser state (no cookies list)")
    origins = [o for o in state.get("origins") or [] if isinstance(o, dict) and "origin" in o]
    context = await session.context()
    if state["cookies"]:
        await context.add_cookies(state["cookies"])
    if origins:
        await context.add_init_script(f"({_LOCAL_STORAGE_SCRIPT})({json.dumps(origins)})")
        for page in context.pages:
            if not page.is_closed() and page.url.startswith(("http:", "https:")):
                await page.evaluate(_LOCAL_STORAGE_SCRIPT, origins)
    return {"path": args["path"], "cookies": len(state["cookies"]), "origins": len(origins)}


async def _captchas(session: BrowserSession) -> list[dict[str, Any]]:
    page = await session.page()
    found: list[dict[str, Any]] = []
    for frame in page.frames:  # widgets inside same- or cross-origin frames count too
        try:
            found += await frame.evaluate(_CAPTCHA_SCRIPT)
        except Exception:  # a frame navigating away: nothing to see there now
            continue
    return found


async def detect_captcha(session: BrowserSession, args: dict[str, Any]) -> Any:
    found = await _captchas(session)
    return {"detected": bool(found), "captchas": found, "types": sorted({c["type"] for c in found})}


async def wait_captcha(session: BrowserSession, args: dict[str, Any]) -> Any:
    """Until no challenge is shown (``resolved``) or ``timeout`` seconds pass (not resolved)."""
    deadline = time.monotonic() + (args.get("timeout") or 30)
    interval = args.get("poll_interval") or 1.0
    while await _captchas(session):
        if time.monotonic() + interval > deadline:
            return {"resolved": False}
        await asyncio.sleep(interval)
    return {"resolved": True}


async def restart(session: BrowserSession, args: dict[str, Any]) -> Any:
    """``hard`` (or a ``locale``): a fresh Chromium, nothing kept. ``soft``: every tab closed, one blank
    tab left, cookies and storage kept. Then the URL block/allow lists (globs) apply to every request."""
    mode = args.get("mode") or "soft"
    if mode not in ("soft", "hard"):
        raise PageError("mode must be soft or hard")
    if args.get("locale") is not None and mode != "hard":
        raise PageError("a locale needs mode hard (Chromium restarts in it)")
    if mode == "hard":
        await session.restart_browser(args.get("locale"))
    else:
        old = await session.pages()
        await session.new_page()
        for page in old:
            await page.close()
    await CONTROLS.bind(session)
    CONTROLS.blocked = list(args.get("url_blocklist") or [])
    CONTROLS.allowed = list(args.get("url_allowlist") or [])
    page = await session.page()
    return {
        "mode": mode,
        "tabs": len(await session.pages()),
        "url": page.url,
        "url_blocklist": CONTROLS.blocked,
        "url_allowlist": CONTROLS.allowed,
    }


OPERATIONS: dict[str, Operation] = {
    "restart": restart,
    "network_headers": set_headers,
    "network_scoped_headers": set_scoped_headers,
    "network_route_add": add_route,
    "network_route_remove": remove_route,
    "network_requests": get_requests,
    "network_export_har": export_har,
    "state_save": save_state,
    "state_load": load_state,
    "captcha_detect": detect_captcha,
    "captcha_wait": wait_captcha,
}
