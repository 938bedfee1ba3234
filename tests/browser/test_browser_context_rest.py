"""``/v1/browser/network|state|captcha`` through the agent-sandbox SDK (sync and async) against a real
browser program: headers reach the server, routes mock and abort, the request log and its HAR list
the requests made, a saved state loads back, CAPTCHA widgets are detected and waited for."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.captcha_wait_result import CaptchaWaitResult
from agent_sandbox.types.restart_request import RestartRequest
from agent_sandbox.types.route_response_model import RouteResponseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from tests.browser.conftest import BrowserProgram
from tests.support.servers import serve_app

pytestmark = pytest.mark.chromium

CAPTCHA = """<!doctype html><title>Check</title>
<div class="g-recaptcha" data-sitekey="key-1" style="width:300px;height:80px">captcha</div>
<script>
if (location.hash === '#solve') setTimeout(() => document.querySelector('.g-recaptcha').remove(), 800);
</script>"""


async def headers(request: Request) -> JSONResponse:
    return JSONResponse({name: value for name, value in request.headers.items() if name.startswith("x-")})


async def page(request: Request) -> HTMLResponse:
    return HTMLResponse("<!doctype html><title>Plain</title><img src='/pixel.png'><p>plain</p>")


async def captcha(request: Request) -> HTMLResponse:
    return HTMLResponse(CAPTCHA)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    routes = [Route("/headers", headers), Route("/plain", page), Route("/captcha", captcha)]
    with serve_app(Starlette(routes=routes)) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def body_json(client: Sandbox) -> dict:
    return json.loads(client.browser_page.evaluate(expression="document.body.innerText").data["result"])


def test_headers_global_and_scoped(client: Sandbox, site: str) -> None:
    client.browser_network.set_headers(headers={"X-Everywhere": "1"})
    client.browser_network.set_scoped_headers(origin=site, headers={"X-Only-Here": "2"})
    client.browser_page.navigate(url=f"{site}/headers")
    assert body_json(client) == {"x-everywhere": "1", "x-only-here": "2"}
    client.browser_network.set_headers(headers={})
    client.browser_network.set_scoped_headers(origin=site, headers={})
    client.browser_page.navigate(url=f"{site}/headers")
    assert body_json(client) == {}


def test_routes_mock_and_abort(client: Sandbox, site: str) -> None:
    mocked = RouteResponseModel(status=200, body='{"mocked": true}', content_type="application/json")
    client.browser_network.add_route(url_pattern="**/headers", response=mocked)
    client.browser_page.navigate(url=f"{site}/headers")
    assert body_json(client) == {"mocked": True}
    client.browser_network.remove_route(url_pattern="**/headers")
    client.browser_network.add_route(url_pattern="**/*.png", abort=True)
    client.browser_page.navigate(url=f"{site}/plain")
    failed = client.browser_network.get_requests(filter="pixel.png").data
    assert failed[-1]["failure"]
    client.browser_network.remove_route(url_pattern="**/*.png")
    client.browser_page.navigate(url=f"{site}/headers")
    assert body_json(client) == {}


def test_request_log_and_har(client: Sandbox, site: str, tmp_path: Path) -> None:
    client.browser_page.navigate(url=f"{site}/plain")
    requests = client.browser_network.get_requests(filter=f"{site}/*", limit=50).data
    plain = [r for r in requests if r["url"] == f"{site}/plain"]
    assert plain[-1]["status"] == 200 and plain[-1]["method"] == "GET"
    assert plain[-1]["resource_type"] == "document"
    har_path = tmp_path / "session.har"
    answer = client.browser_network.export_har(save_path=str(har_path))
    assert answer.data["entries"] > 0
    har = json.loads(har_path.read_text())
    assert har["log"]["version"] == "1.2"
    assert any(e["request"]["url"] == f"{site}/plain" and e["response"]["status"] == 200 for e in har["log"]["entries"])


def test_state_save_and_load(client: Sandbox, site: str, tmp_path: Path) -> None:
    client.browser_page.navigate(url=f"{site}/plain")
    client.browser_cookies.set_cookies(cookies=[{"name": "saved", "value": "yes", "url": site}])
    client.browser_page.evaluate(expression="localStorage.setItem('note', 'kept')")
    state = tmp_path / "state.json"
    saved = client.browser_state.save(path=str(state))
    assert saved.data["cookies"] >= 1 and state.is_file()
    client.browser_cookies.clear_cookies()
    client.browser_page.evaluate(expression="localStorage.clear()")
    loaded = client.browser_state.load(path=str(state))
    assert loaded.data["origins"] == 1
    assert [c["value"] for c in client.browser_cookies.get_cookies(urls=site).data] == ["yes"]
    assert client.browser_page.evaluate(expression="localStorage.getItem('note')").data["result"] == "kept"
    client.browser_cookies.clear_cookies()


def test_captcha_detect_and_wait(client: Sandbox, site: str) -> None:
    client.browser_page.navigate(url=f"{site}/plain")
    assert client.browser_captcha.detect().data["detected"] is False
    client.browser_page.navigate(url=f"{site}/captcha")
    found = client.browser_captcha.detect().data
    assert found["detected"] is True and found["types"] == ["recaptcha"]
    assert found["captchas"][0]["sitekey"] == "key-1"
    still = client.browser_captcha.wait(timeout=0.5, poll_interval=0.1)
    assert isinstance(still.data, CaptchaWaitResult) and still.data.resolved is False
    client.browser_page.navigate(url=f"{site}/captcha#solve")
    client.browser_page.reload()
    assert client.browser_captcha.wait(timeout=10, poll_interval=0.1).data.resolved is True


def test_the_async_client_too(gateway: str, site: str) -> None:
    async def scenario() -> bool:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        await client.browser_page.navigate(url=f"{site}/captcha")
        return (await client.browser_captcha.detect()).data["detected"]

    assert asyncio.run(scenario()) is True


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/browser/network/headers", {"headers": {"x": 1}}, 422),
        ("POST", "/v1/browser/network/scoped_headers", {"origin": "nonsense", "headers": {}}, 400),
        ("POST", "/v1/browser/network/route", {"url_pattern": "**/x"}, 400),
        ("DELETE", "/v1/browser/network/route", {"url_pattern": "**/never-added"}, 404),
        ("POST", "/v1/browser/network/export_har", {"save_path": "/no/such/dir/x.har"}, 404),
        ("POST", "/v1/browser/state/load", {"path": "/no/such/state.json"}, 404),
        ("POST", "/v1/browser/state/save", {}, 422),
        ("POST", "/v1/browser/captcha/wait", {"timeout": -1}, 422),
        ("GET", "/v1/browser/network/requests?limit=0", None, 422),
    ],
)
def test_bad_input_is_a_4xx_envelope(gateway: str, method: str, path: str, body: object, status: int) -> None:
    response = httpx.request(method, f"{gateway}{path}", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False


def test_a_broken_state_file_is_400(gateway: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    response = httpx.post(f"{gateway}/v1/browser/state/load", json={"path": str(broken)}, timeout=30)
    assert response.status_code == 400 and response.json()["success"] is False


def test_soft_restart_closes_tabs_and_applies_url_lists(client: Sandbox, site: str) -> None:
    client.browser_tabs.create(url=f"{site}/plain")
    client.browser_cookies.set_cookies(cookies=[{"name": "soft", "value": "kept", "url": site}])
    answer = client.browser.restart(request=RestartRequest(mode="soft", url_blocklist=["*/headers*"]))
    assert answer.data["tabs"] == 1 and answer.data["url"] == "about:blank"
    assert len(client.browser_tabs.list().data) == 1
    assert [c["name"] for c in client.browser_cookies.get_cookies(urls=site).data] == ["soft"]
    with pytest.raises(ApiError) as blocked:
        client.browser_page.navigate(url=f"{site}/headers")
    assert blocked.value.status_code == 400 and "ERR_BLOCKED_BY_CLIENT" in blocked.value.body["message"]
    time.sleep(0.5)  # Chromium shows its error page a moment later; a navigation meanwhile is interrupted
    client.browser_page.navigate(url=f"{site}/plain")
    client.browser.restart(request=RestartRequest(mode="soft"))  # lists cleared
    client.browser_page.navigate(url=f"{site}/headers")
    client.browser_cookies.clear_cookies()


def test_hard_restart_is_a_fresh_browser_in_the_locale(client: Sandbox, browser: BrowserProgram, site: str) -> None:
    client.browser_cookies.set_cookies(cookies=[{"name": "hard", "value": "gone", "url": site}])
    before = browser.chromium_pids()
    answer = client.browser.restart(request=RestartRequest(mode="hard", locale="fr-FR"))
    assert answer.success is True and answer.data["mode"] == "hard"
    assert browser.chromium_pids() != before
    assert client.browser_cookies.get_cookies(urls=site).data == []
    client.browser_page.navigate(url=f"{site}/plain")
    assert client.browser_page.evaluate(expression="navigator.language").data["result"] == "fr-FR"


def test_restart_refuses_bad_requests(gateway: str) -> None:
    for body in ({"mode": "reboot"}, {"locale": "not a locale!"}):
        assert httpx.post(f"{gateway}/v1/browser/restart", json=body, timeout=30).status_code == 422
    soft_locale = httpx.post(f"{gateway}/v1/browser/restart", json={"mode": "soft", "locale": "de"}, timeout=30)
    assert soft_locale.status_code == 400 and soft_locale.json()["success"] is False
