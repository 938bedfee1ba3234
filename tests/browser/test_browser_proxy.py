"""The browser follows the proxy settings, for real: a browser program whose Chromium reads the
gateway's PAC file (``AGENTBOX_PROXY_PAC_URL``), a local recording proxy as the upstream, and a local
app under ``*.test`` names (Chromium resolves them to 127.0.0.1; loopback names would bypass any
proxy). Through the upstream the page is the proxy's; an exclude or a mapping reaches the app and the
proxy sees nothing; credentials are added by the forwarder; no browser restart happens."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from dataclasses import replace

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.types.restart_request import RestartRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.browser.conftest import BrowserProgram, start_program
from tests.support.recording_proxy import RecordingProxy, recording_proxy
from tests.support.servers import free_port, serve_app

pytestmark = pytest.mark.chromium

SECRET = "br0wser-s3cret"


async def app_page(request: Request) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><title>app</title><p id='via'>app {request.url.path}</p>")


@pytest.fixture(scope="module")
def app_port() -> Iterator[int]:
    with serve_app(Starlette(routes=[Route("/{path:path}", app_page)])) as url:
        yield int(url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def forwarder_port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def browser(forwarder_port: int) -> Iterator[BrowserProgram]:
    env = {
        "AGENTBOX_PROXY_PAC_URL": f"http://127.0.0.1:{forwarder_port}/proxy.pac",
        "AGENTBOX_BROWSER_ARGS": "'--host-resolver-rules=MAP *.test 127.0.0.1'",
    }
    with start_program(env) as program:
        yield program


@pytest.fixture(scope="module")
def gateway(browser: BrowserProgram, forwarder_port: int, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = replace(
        GatewaySettings.from_env({}),
        skills_path=tmp_path_factory.mktemp("skills"),
        browser_url=browser.base_url,
        cdp_url=f"http://127.0.0.1:{browser.cdp_port}",
        browser_proxy_port=forwarder_port,
    )
    with serve_app(build_app(settings)) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Iterator[Sandbox]:
    client = Sandbox(base_url=gateway, timeout=60)
    yield client
    client.proxy.remove_upstream()
    for mapping in client.proxy.list_mappings().data or []:
        client.proxy.remove_mapping(source=mapping.source)
    for pattern in client.proxy.list_excludes().data or []:
        client.proxy.remove_exclude(pattern=pattern)


def shown(client: Sandbox, url: str) -> str:
    client.browser_page.navigate(url=url)
    return client.browser_page.evaluate(expression="document.getElementById('via').textContent").data["result"]


def test_the_upstream_sees_the_browser_and_an_exclude_bypasses_it(
    client: Sandbox, browser: BrowserProgram, app_port: int
) -> None:
    pids = browser.chromium_pids()
    with recording_proxy() as upstream:
        client.proxy.add_exclude(pattern="10.0.0.0/8")  # networks are matched in the PAC file too
        answer = client.proxy.set_upstream(server=upstream.address)
        assert answer.hint is None  # Chromium read the new PAC file before the answer
        proxied = f"http://site.test:{app_port}/through"
        assert shown(client, proxied) == f"proxied {proxied}"
        assert proxied in upstream.targets()
        assert client.proxy.add_exclude(pattern="direct.test").hint is None
        assert shown(client, f"http://direct.test:{app_port}/around") == "app /around"
        assert not any("direct.test" in target for target in upstream.targets())
        client.proxy.remove_upstream()
        seen = len(upstream.requests)
        assert shown(client, f"http://site.test:{app_port}/again") == "app /again"
        assert len(upstream.requests) == seen
    assert browser.chromium_pids() == pids  # applied without restarting Chromium


def test_a_mapping_serves_a_host_from_a_local_port(client: Sandbox, app_port: int) -> None:
    with recording_proxy() as upstream:
        client.proxy.set_upstream(server=upstream.address)
        client.proxy.add_mapping(source="mapped.test", target=f":{app_port}/base")
        assert shown(client, "http://mapped.test/page") == "app /base/page"
        # Chromium's own background requests (accounts.google.com…) rightly go upstream; the mapped host not
        assert not [target for target in upstream.targets() if "mapped.test" in target]


def test_the_settings_outlive_a_browser_restart(client: Sandbox, app_port: int) -> None:
    """A fresh Chromium reads the PAC file as it starts: the settings still apply."""
    with recording_proxy() as upstream:
        client.proxy.set_upstream(server=upstream.address)
        client.browser.restart(request=RestartRequest(mode="hard"))
        url = f"http://after-restart.test:{app_port}/"
        assert shown(client, url) == f"proxied {url}"
        assert url in upstream.targets()


def _credentials_flow(gateway: str, upstream: RecordingProxy, app_port: int) -> None:
    async def scenario() -> None:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        info = (await client.proxy.set_upstream(server=f"erin:{SECRET}@{upstream.address}")).data
        assert info.password == "****"
        url = f"http://auth.test:{app_port}/secret-area"
        await client.browser_page.navigate(url=url)
        text = (await client.browser_page.evaluate(expression="document.getElementById('via').textContent")).data
        assert text["result"] == f"proxied {url}"
        diagnosis = await client.proxy.diagnose(url=url)
        assert (diagnosis.data.route, diagnosis.data.status_code) == ("proxy", 200)
        assert SECRET not in diagnosis.model_dump_json()
        await client.proxy.remove_upstream()

    asyncio.run(scenario())


def test_an_authenticating_upstream_gets_the_credentials_from_the_forwarder(
    client: Sandbox, gateway: str, app_port: int
) -> None:
    with recording_proxy(credentials=("erin", SECRET)) as upstream:
        _credentials_flow(gateway, upstream, app_port)
    expected = "Basic " + base64.b64encode(f"erin:{SECRET}".encode()).decode()
    page_requests = [r for r in upstream.requests if r.target.endswith("/secret-area")]
    assert page_requests and all(r.authorization == expected for r in page_requests)
