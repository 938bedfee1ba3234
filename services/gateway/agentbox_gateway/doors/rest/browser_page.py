"""REST door of the page plane, as the agent-sandbox SDK's ``browser_page``, ``browser_tabs``,
``browser_cookies``, ``browser_network``, ``browser_state`` and ``browser_captcha`` clients call it:
``/v1/browser/page/*``, ``/tabs[/{index}[/activate]]``, ``/cookies``, ``/network/*``, ``/state/*``,
``/captcha/*``. Bodies are checked here (422), then the browser program runs the operation (see
:mod:`..planes.browser.page`); its refusals keep their 4xx status, no browser program is 503."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from ...planes.browser import PageFailed
from .bodies import StrictBody
from .envelope import RestError, error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


class Body(StrictBody):
    model_config = ConfigDict(extra="forbid")


class Navigate(Body):
    url: str = Field(min_length=1)
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] | None = None
    timeout: float | None = Field(None, gt=0, le=600, description="seconds")


class Click(Body):
    selector: str | None = None
    index: int | None = Field(None, ge=0)
    x: float | None = None
    y: float | None = None
    button: Literal["left", "right", "middle"] | None = None
    click_count: int | None = Field(None, ge=1, le=3)


class Fill(Body):
    text: str
    selector: str | None = None
    index: int | None = Field(None, ge=0)


class TypeText(Body):
    text: str
    delay: float | None = Field(None, ge=0, le=1000, description="milliseconds between keys")


class PressKey(Body):
    key: str = Field(min_length=1)


class HotKey(Body):
    keys: list[str] = Field(min_length=1)


class Hover(Body):
    selector: str | None = None
    x: float | None = None
    y: float | None = None


class SelectOption(Body):
    selector: str = Field(min_length=1)
    value: str | None = None
    label: str | None = None
    index: int | None = Field(None, ge=0)


class Selector(Body):
    selector: str = Field(min_length=1)


class UploadFile(Body):
    selector: str = Field(min_length=1)
    files: list[str] = Field(min_length=1)


class FillForm(Body):
    items: list[dict[str, Any]] = Field(min_length=1, description="[{selector, value}]")


class Scroll(Body):
    direction: Literal["up", "down", "left", "right"] | None = None
    amount: int | None = Field(None, ge=0, le=100_000)


class ScrollTo(Body):
    x: int | None = Field(None, ge=0)
    y: int | None = Field(None, ge=0)


class ConsoleExport(Body):
    save_path: str = Field(min_length=1)
    clear: bool | None = None


class Evaluate(Body):
    expression: str = Field(min_length=1)


class FindText(Body):
    keyword: str = Field(min_length=1)


class Wait(Body):
    type: Literal["selector", "load", "url", "network_idle", "download", "function", "response", "request", "timeout"]
    selector: str | None = None
    state: str | None = None
    url: str | None = None
    save_path: str | None = None
    timeout: float | None = Field(None, ge=0, le=600, description="seconds")
    expression: str | None = None
    polling: float | None = Field(None, gt=0, le=60, description="seconds")
    url_pattern: str | None = None


class NewTab(Body):
    url: str | None = None


class SetCookies(Body):
    cookies: list[dict[str, Any]] = Field(min_length=1)


class Headers(Body):
    headers: dict[str, str]


class ScopedHeaders(Body):
    origin: str = Field(min_length=1, description="scheme://host[:port]")
    headers: dict[str, str]


class MockResponse(Body):
    status: int | None = Field(None, ge=100, le=599)
    headers: dict[str, str] | None = None
    body: str | None = None
    content_type: str | None = None


class AddRoute(Body):
    url_pattern: str = Field(min_length=1, description="a Playwright glob, e.g. **/api/*")
    response: MockResponse | None = None
    abort: bool | None = None


class RemoveRoute(Body):
    url_pattern: str = Field(min_length=1)


class SavePath(Body):
    save_path: str = Field(min_length=1)


class StatePath(Body):
    path: str = Field(min_length=1)


class CaptchaWait(Body):
    timeout: float | None = Field(None, gt=0, le=600, description="seconds")
    poll_interval: float | None = Field(None, gt=0, le=60, description="seconds")


class Restart(Body):
    mode: Literal["soft", "hard"] | None = None
    url_blocklist: list[str] | None = Field(None, description="URL globs refused")
    url_allowlist: list[str] | None = Field(None, description="URL globs allowed (none: all)")
    locale: str | None = Field(None, pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


class Record(Body):
    action: Literal["once", "start", "pause", "resume", "stop", "status"] | None = None
    save_path: str | None = Field(None, min_length=1, description="the MP4 to write (default: in /tmp)")
    duration: float | None = Field(None, gt=0, le=3600, description="seconds (once: default 5)")
    fps: int | None = Field(None, ge=1, le=30)
    quality: int | None = Field(None, ge=1, le=100, description="JPEG quality of the frames")


class DisplayRecord(Body):
    action: Literal["start", "stop", "status"]
    save_path: str | None = Field(None, min_length=1)
    fps: int | None = Field(None, ge=1, le=30)
    crf: int | None = Field(None, ge=0, le=51, description="H.264 quality (lower: better, larger)")
    max_duration: float | None = Field(None, gt=0, le=3600, description="seconds; stops by itself")
    width: int | None = Field(None, ge=16, le=7680)
    height: int | None = Field(None, ge=16, le=4320)


def _arguments(body: BaseModel | None) -> dict[str, Any]:
    return body.model_dump(exclude_none=True) if body is not None else {}


def display_router(planes: Planes) -> APIRouter:
    """``POST /v1/display/record``: the display here is the browser's, recorded as a screencast."""
    api = APIRouter(prefix="/v1/display", tags=["display"], responses=PAGE_ERRORS)

    @api.post("/record")
    async def display_record(body: DisplayRecord) -> dict[str, Any]:
        """``start`` (``save_path``, ``fps``, ``crf``, ``max_duration``, ``width``, ``height``), ``stop``,
        ``status``: ``{status: idle|recording|stopped, save_path, duration, file_size_bytes}``."""
        return ok(await _forward(planes, "display_record", _arguments(body)))

    return api


async def _forward(planes: Planes, operation: str, arguments: dict[str, Any]) -> Any:
    """The operation's data. The browser program's refusals keep their status (the SDK reads them),
    which no error kind carries, so they are answered here; no browser program is the handler's 503."""
    try:
        return await planes.page.call(operation, arguments)
    except PageFailed as exc:
        if exc.status >= 500 and exc.status not in (503, 504):  # the browser program broke: never a 500 here
            raise RestError(502, f"the browser program failed the operation: {exc}") from exc
        raise RestError(exc.status, str(exc)) from exc


#: What the page routes answer besides 200 (the browser program's refusals, passed on).
PAGE_ERRORS = error_responses(400, 404, 408, 409, 502, 503, 504)


def router(planes: Planes) -> APIRouter:
    api = APIRouter(prefix="/v1/browser", tags=["browser page"], responses=PAGE_ERRORS)

    async def run(operation: str, arguments: dict[str, Any]) -> Any:
        return await _forward(planes, operation, arguments)

    def post(path: str, operation: str, model: type[BaseModel] | None, summary: str, method: str = "POST") -> None:
        async def without_body() -> dict[str, Any]:
            return ok(await run(operation, {}))

        async def with_body(body: BaseModel) -> dict[str, Any]:
            return ok(await run(operation, _arguments(body)))

        # The body's model is chosen per route (annotations are strings here: set the class itself).
        with_body.__annotations__ = {"body": model, "return": dict[str, Any]}
        endpoint = without_body if model is None else with_body
        api.add_api_route(path, endpoint, methods=[method], summary=summary, name=f"page_{operation}")

    for path, operation, model, summary, *method in (
        ("/page/navigate", "navigate", Navigate, "Navigate the current tab to a URL"),
        ("/page/back", "back", None, "Go back in the tab's history"),
        ("/page/forward", "forward", None, "Go forward in the tab's history"),
        ("/page/reload", "reload", None, "Reload the current page"),
        ("/page/click", "click", Click, "Click by selector, element index or coordinates"),
        ("/page/fill", "fill", Fill, "Replace an input's value"),
        ("/page/type", "type", TypeText, "Type text into the focused element"),
        ("/page/press_key", "press_key", PressKey, "Press one key"),
        ("/page/hot_key", "hot_key", HotKey, "Press a key combination"),
        ("/page/hover", "hover", Hover, "Hover an element or a point"),
        ("/page/select_option", "select_option", SelectOption, "Select an option of a <select>"),
        ("/page/check", "check", Selector, "Check a checkbox or radio"),
        ("/page/uncheck", "uncheck", Selector, "Uncheck a checkbox"),
        ("/page/upload_file", "upload_file", UploadFile, "Put sandbox files into a file input"),
        ("/page/fill_form", "fill_form", FillForm, "Fill several fields at once"),
        ("/page/scroll", "scroll", Scroll, "Scroll in a direction"),
        ("/page/scroll_to", "scroll_to", ScrollTo, "Scroll to a position"),
        ("/page/scroll_to_element", "scroll_to_element", Selector, "Scroll an element into view"),
        ("/page/console/export", "console_export", ConsoleExport, "Write the console log to a JSON file"),
        ("/page/evaluate", "evaluate", Evaluate, "Run JavaScript in the page; data.result is its value"),
        ("/page/find_text", "find_text", FindText, "Find visible text occurrences"),
        ("/page/wait", "wait", Wait, "Wait for a selector, load state, URL, function, request, download…"),
        ("/tabs", "tabs_create", NewTab, "Open a tab (about:blank without url) and make it current"),
        ("/cookies", "cookies_set", SetCookies, "Set cookies (each with url, or domain and path)"),
        ("/network/headers", "network_headers", Headers, "Extra HTTP headers for every request"),
        ("/network/scoped_headers", "network_scoped_headers", ScopedHeaders, "Extra headers for one origin"),
        ("/network/route", "network_route_add", AddRoute, "Mock (response) or abort matching requests"),
        ("/network/route", "network_route_remove", RemoveRoute, "Remove a route added before", "DELETE"),
        ("/network/export_har", "network_export_har", SavePath, "Write the request log as a HAR 1.2 file"),
        ("/state/save", "state_save", StatePath, "Save cookies and localStorage to a JSON file"),
        ("/state/load", "state_load", StatePath, "Load a saved state (cookies, localStorage)"),
        ("/captcha/wait", "captcha_wait", CaptchaWait, "Wait until no CAPTCHA is shown (data.resolved)"),
    ):
        post(path, operation, model, summary, *method)

    @api.get(
        "/page/screenshot",
        response_class=Response,
        responses={200: {"content": {"image/png": {}, "image/jpeg": {}}, "description": "the page"}},
    )
    async def page_screenshot(
        full_page: bool = Query(False),
        format: Literal["png", "jpeg"] = Query("png"),
        quality: int | None = Query(None, ge=0, le=100),
    ) -> Response:
        """The current tab as an image (raw bytes)."""
        shot = await run("screenshot", {"full_page": full_page, "format": format, "quality": quality})
        return Response(base64.b64decode(shot["data"]), media_type=shot["mime_type"])

    @api.get("/page/html")
    async def page_html(outer: bool = Query(True, description="the whole document")) -> dict[str, Any]:
        """The page's HTML (the document, or the body's inner HTML with ``outer=false``)."""
        return ok(await run("html", {"outer": outer}))

    @api.get("/page/text")
    async def page_text() -> dict[str, Any]:
        return ok(await run("text", {}))

    @api.get("/page/markdown")
    async def page_markdown() -> dict[str, Any]:
        """``{markdown, url, title}``: the visible content, as the MCP ``browser_get_markdown``."""
        return ok(await run("markdown", {}))

    @api.get("/page/elements")
    async def page_elements() -> dict[str, Any]:
        """``[{index, tag, description}]``: the interactive elements, numbered for ``click``/``fill``."""
        return ok(await run("elements", {}))

    @api.get("/page/console")
    async def page_console(clear: bool = Query(False)) -> dict[str, Any]:
        """``[{type, text, url, line, timestamp}]``: the latest console messages of every tab."""
        return ok(await run("console", {"clear": clear}))

    @api.post("/page/record")
    async def page_record(body: Record | None = None) -> dict[str, Any]:
        """A screencast of the current tab as an MP4 (ffmpeg): ``once`` (for ``duration`` s), or
        ``start``/``pause``/``resume``/``stop``/``status``; ``{status, save_path, duration, file_size_bytes}``."""
        return ok(await run("record", _arguments(body)))

    @api.post("/restart")
    async def restart(body: Restart | None = None) -> dict[str, Any]:
        """``soft`` (default): close every tab, one blank tab left, cookies kept; ``hard`` (or a
        ``locale``): a fresh Chromium with a new profile. URL block/allow lists (globs) then apply."""
        return ok(await run("restart", _arguments(body)))

    @api.get("/network/requests")
    async def network_requests(
        filter: str | None = Query(None, description="substring or glob of the URL"),
        limit: int | None = Query(None, ge=1, le=2000),
    ) -> dict[str, Any]:
        """``[{id, url, method, resource_type, status, mime_type, failure, started, duration_ms}]``."""
        return ok(await run("network_requests", {"filter": filter, "limit": limit}))

    @api.get("/captcha/detect")
    async def captcha_detect() -> dict[str, Any]:
        """``{detected, types, captchas}``: reCAPTCHA, hCaptcha, Turnstile frames or widgets shown."""
        return ok(await run("captcha_detect", {}))

    @api.get("/tabs")
    async def tabs_list() -> dict[str, Any]:
        """``[{index, active, title, url}]``."""
        return ok(await run("tabs_list", {}))

    @api.put("/tabs/{index}/activate")
    async def tabs_activate(index: int = Path(ge=0)) -> dict[str, Any]:
        return ok(await run("tabs_activate", {"index": index}))

    @api.delete("/tabs/{index}")
    async def tabs_close(index: int = Path(ge=0)) -> dict[str, Any]:
        """Close a tab; the last one left becomes current (a blank one replaces the only tab)."""
        return ok(await run("tabs_close", {"index": index}))

    @api.get("/cookies")
    async def cookies_get(urls: str | None = Query(None, description="comma-separated")) -> dict[str, Any]:
        return ok(await run("cookies_get", {"urls": urls} if urls else {}))

    @api.delete("/cookies")
    async def cookies_clear() -> dict[str, Any]:
        return ok(await run("cookies_clear", {}))

    return api
