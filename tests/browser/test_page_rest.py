"""``/v1/browser/page|tabs|cookies`` through the public agent-sandbox SDK (sync and async), against a
real gateway whose page plane is a real browser program (Playwright + Chromium): every answer parsed
into the SDK's model and its effect read back in the page; bad input is a 4xx envelope."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response import Response
from agent_sandbox.types.response_dict import ResponseDict
from agent_sandbox.types.response_list import ResponseList
from agent_sandbox.types.response_str import ResponseStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.browser.conftest import BrowserProgram
from tests.support.png import decode_png
from tests.support.servers import serve_app

pytestmark = pytest.mark.chromium

NAME = "document.querySelector('#name').value"

FORM_STATE = (
    "['#name', '#agree', '#color'].map((s) => document.querySelector(s))"
    ".map((e) => e.type === 'checkbox' ? e.checked : e.value)"
)

FORM = """<!doctype html><html><head><title>Form</title></head><body>
<h1>Sign up</h1><p>Pick a colour, any colour.</p>
<input id="name" name="name" value="old">
<input id="agree" type="checkbox">
<select id="color"><option value="red">Red</option><option value="green">Green</option></select>
<input id="upload" type="file" multiple>
<button id="go" onclick="document.title = 'clicked ' + document.getElementById('name').value">Go</button>
<div style="height:3000px">tall</div><p id="bottom">Bottom colour</p>
<script>console.log('form ready'); console.warn('careful');</script>
</body></html>"""


async def form(request: Request) -> HTMLResponse:
    return HTMLResponse(FORM)


async def other(request: Request) -> HTMLResponse:
    return HTMLResponse("<!doctype html><title>Other</title><h1>Other page</h1>")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_app(Starlette(routes=[Route("/form", form), Route("/other", other)])) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_navigate_read_and_history(client: Sandbox, site: str) -> None:
    page = client.browser_page
    went = page.navigate(url=f"{site}/other")
    assert isinstance(went, ResponseDict) and went.success is True
    assert went.data["url"] == f"{site}/other" and went.data["title"] == "Other"
    assert went.data["status"] == 200
    page.navigate(url=f"{site}/form", wait_until="domcontentloaded")
    markdown = page.get_markdown()
    assert "# Sign up" in markdown.data["markdown"] and markdown.data["title"] == "Form"
    text = page.get_text()
    assert isinstance(text, ResponseStr) and "Pick a colour" in text.data
    assert '<input id="agree"' in page.get_html().data
    assert page.get_html(outer=False).data.lstrip().startswith("<h1>Sign up</h1>")
    back = page.back()
    assert isinstance(back, Response) and back.data["url"] == f"{site}/other"
    assert page.forward().data["url"] == f"{site}/form"
    assert page.reload().data["title"] == "Form"


def test_acting_on_the_page_changes_it(client: Sandbox, site: str, tmp_path: Path) -> None:
    page = client.browser_page
    page.navigate(url=f"{site}/form")
    assert page.fill(selector="#name", text="Ada").data == {"value": "Ada"}
    assert page.check(selector="#agree").data == {"checked": True}
    assert page.evaluate(expression="document.getElementById('agree').checked").data == {"result": True}
    assert page.uncheck(selector="#agree").data == {"checked": False}
    assert page.select_option(selector="#color", value="green").data == {"selected": ["green"]}
    upload = tmp_path / "cv.txt"
    upload.write_text("hello")
    page.upload_file(selector="#upload", files=[str(upload)])
    assert page.evaluate(expression="document.getElementById('upload').files[0].name").data["result"] == "cv.txt"
    page.fill_form(
        items=[
            {"selector": "#name", "value": "Grace"},
            {"selector": "#agree", "value": True},
            {"selector": "#color", "value": "red"},
        ]
    )
    state = page.evaluate(expression=FORM_STATE).data["result"]
    assert state == ["Grace", True, "red"]
    page.click(selector="#go")
    assert page.evaluate(expression="document.title").data["result"] == "clicked Grace"
    page.click(selector="#name", click_count=3)
    page.type_text(text="Linus")
    page.press_key(key="Tab")
    assert page.evaluate(expression=NAME).data["result"] == "Linus"
    page.click(selector="#name")
    page.hot_key(keys=["Control", "a"])
    page.type_text(text="Z")
    assert page.evaluate(expression=NAME).data["result"] == "Z"
    page.hover(selector="#go")
    assert page.evaluate(expression="document.querySelector('#go:hover') !== null").data["result"] is True


def test_elements_then_click_by_index(client: Sandbox, site: str) -> None:
    page = client.browser_page
    page.navigate(url=f"{site}/form")
    page.fill(selector="#name", text="indexed")
    elements = page.get_elements()
    assert isinstance(elements, ResponseList)
    go = next(item for item in elements.data if 'id="go"' not in item["description"] and ">Go<" in item["description"])
    page.click(index=go["index"])
    assert page.evaluate(expression="document.title").data["result"] == "clicked indexed"


def test_scrolling_find_text_and_wait(client: Sandbox, site: str) -> None:
    page = client.browser_page
    page.navigate(url=f"{site}/form")
    assert page.scroll(direction="down", amount=300).data["scroll_y"] == 300
    assert page.scroll(direction="up", amount=100).data["scroll_y"] == 200
    assert page.scroll_to(x=0, y=50).data["scroll_y"] == 50
    assert page.scroll_to_element(selector="#bottom").data["scroll_y"] > 2000
    found = page.find_text(keyword="colour")
    assert [hit["tag"] for hit in found.data] == ["p", "p", "p"]
    assert found.data[2]["context"] == "Bottom colour"
    assert page.wait(type="selector", selector="#bottom").data["type"] == "selector"
    page.evaluate(
        expression="setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<b id=late>late</b>'), 200)"
    )
    assert page.wait(type="function", expression="!!document.getElementById('late')", timeout=5).success
    with pytest.raises(ApiError) as late:
        page.wait(type="selector", selector="#never", timeout=0.3)
    assert late.value.status_code == 408 and late.value.body["success"] is False


def test_screenshot_and_console(client: Sandbox, site: str, tmp_path: Path) -> None:
    page = client.browser_page
    page.navigate(url=f"{site}/form")
    png = decode_png(b"".join(page.screenshot()), rows=1)
    assert png.width > 0
    full = decode_png(b"".join(page.screenshot(full_page=True)), rows=1)
    assert full.height > png.height
    jpeg = b"".join(page.screenshot(format="jpeg", quality=50))
    assert jpeg[:3] == b"\xff\xd8\xff"
    texts = [message["text"] for message in page.get_console().data]
    assert "form ready" in texts and "careful" in texts
    target = tmp_path / "console.json"
    page.export_console(save_path=str(target), clear=True)
    assert "form ready" in target.read_text()
    assert page.get_console().data == []


def test_tabs_and_cookies(client: Sandbox, site: str) -> None:
    tabs = client.browser_tabs
    before = tabs.list().data
    created = tabs.create(url=f"{site}/other")
    assert created.data["title"] == "Other"
    listed = tabs.list()
    assert isinstance(listed, ResponseList) and len(listed.data) == len(before) + 1
    assert listed.data[created.data["index"]]["active"] is True
    tabs.activate(index=0)
    assert tabs.list().data[0]["active"] is True
    tabs.close(index=created.data["index"])
    assert len(tabs.list().data) == len(before)

    cookies = client.browser_cookies
    cookies.clear_cookies()
    cookies.set_cookies(cookies=[{"name": "flavour", "value": "oat", "url": site}])
    read = cookies.get_cookies(urls=site)
    assert isinstance(read, ResponseList)
    assert [(c["name"], c["value"]) for c in read.data] == [("flavour", "oat")]
    client.browser_page.navigate(url=f"{site}/other")
    assert client.browser_page.evaluate(expression="document.cookie").data["result"] == "flavour=oat"
    cookies.clear_cookies()
    assert cookies.get_cookies().data == []


def test_the_async_client_drives_the_same_page(gateway: str, site: str) -> None:
    async def scenario() -> tuple[str, list[str]]:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        await client.browser_page.navigate(url=f"{site}/form")
        await client.browser_page.fill(selector="#name", text="async")
        value = (await client.browser_page.evaluate(expression=NAME)).data["result"]
        titles = [tab["title"] for tab in (await client.browser_tabs.list()).data]
        return value, titles

    value, titles = asyncio.run(scenario())
    assert value == "async" and "Form" in titles


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/browser/page/navigate", {"url": 5}, 422),
        ("POST", "/v1/browser/page/navigate", {"url": "example.com"}, 400),
        ("POST", "/v1/browser/page/click", {}, 400),
        ("POST", "/v1/browser/page/click", {"selector": "#nothing-here"}, 404),
        ("POST", "/v1/browser/page/fill", {"selector": "#name"}, 422),
        ("POST", "/v1/browser/page/upload_file", {"selector": "#upload", "files": ["/no/such/file"]}, 404),
        ("POST", "/v1/browser/page/wait", {"type": "sometime"}, 422),
        ("POST", "/v1/browser/page/wait", {"type": "selector"}, 400),
        ("POST", "/v1/browser/page/evaluate", {"expression": "throw new Error('boom')"}, 400),
        ("POST", "/v1/browser/page/scroll", {"direction": "sideways"}, 422),
        ("POST", "/v1/browser/cookies", {"cookies": [{"name": "x", "value": "y"}]}, 400),
        ("PUT", "/v1/browser/tabs/99/activate", None, 400),
        ("DELETE", "/v1/browser/tabs/-1", None, 422),
        ("POST", "/v1/browser/page/extra", {}, 404),
    ],
)
def test_bad_input_is_a_4xx_envelope_and_changes_nothing(
    gateway: str, site: str, client: Sandbox, method: str, path: str, body: dict | None, status: int
) -> None:
    client.browser_page.navigate(url=f"{site}/form")
    tabs_before = client.browser_tabs.list().data
    response = httpx.request(method, f"{gateway}{path}", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    assert client.browser_tabs.list().data == tabs_before
    assert client.browser_page.evaluate(expression=NAME).data["result"] == "old"


def test_no_browser_program_is_503(tmp_path: Path) -> None:
    settings = replace(GatewaySettings.from_env({}), skills_path=tmp_path, browser_url="http://127.0.0.1:9")
    with serve_app(build_app(settings)) as url, contextlib.closing(httpx.Client(timeout=10)) as http:
        response = http.post(f"{url}/v1/browser/page/navigate", json={"url": "http://example.com"})
    assert response.status_code == 503 and response.json()["success"] is False


def test_the_page_door_refuses_browser_origins(browser: BrowserProgram) -> None:
    refused = httpx.post(f"{browser.base_url}/page/text", json={}, headers={"Origin": "http://evil.example"})
    assert refused.status_code == 403
    rebound = httpx.post(f"{browser.base_url}/page/text", json={}, headers={"Host": "evil.example"})
    assert rebound.status_code == 403
