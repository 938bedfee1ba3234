"""``/v1/proxy/*`` and ``/v1/browser/proxy.pac`` through the agent-sandbox SDK (sync and async), with
no browser: every answer parses into the SDK's models, the password is never answered in clear text,
``diagnose`` really fetches through a working proxy (a local recording one) and reports a dead one,
a mapping serves a local app, and bad input is a 4xx that changes nothing. (The browser following the
settings is tested in ``tests/browser/test_browser_proxy.py``.)"""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.proxy_diagnose_result import ProxyDiagnoseResult
from agent_sandbox.types.proxy_mapping_route import ProxyMappingRoute
from agent_sandbox.types.proxy_upstream_info import ProxyUpstreamInfo
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.recording_proxy import recording_proxy
from tests.support.servers import free_port, serve_app

SECRET = "s3cr3t-pa55"
KEY = "proxy-test-key"


@pytest.fixture
def gateway_settings(gateway_settings: GatewaySettings) -> GatewaySettings:
    """Any free port for the forwarder; a DevTools address nothing listens on (no browser here)."""
    return replace(gateway_settings, browser_proxy_port=0, cdp_url=f"http://127.0.0.1:{free_port()}")


async def echo(request: Request) -> PlainTextResponse:
    return PlainTextResponse(f"app saw {request.headers['host']} {request.url.path}")


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    with serve_app(Starlette(routes=[Route("/{path:path}", echo)])) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=30)


def test_upstream_is_set_read_and_removed_with_the_password_masked(client: Sandbox, gateway: str) -> None:
    assert client.proxy.get_upstream().data is None
    answer = client.proxy.set_upstream(server=f"http://alice:{SECRET}@127.0.0.1:3128")
    assert answer.data == ProxyUpstreamInfo(
        addr="127.0.0.1:3128", username="alice", password="****", server="http://alice:****@127.0.0.1:3128"
    )
    assert answer.hint  # no browser here: the settings apply when it starts
    assert client.proxy.get_upstream().data == answer.data
    for path in ("/v1/proxy/upstream", "/v1/browser/proxy.pac", "/v1/proxy/mappings", "/v1/proxy/excludes"):
        assert SECRET not in shared_http.get(f"{gateway}{path}").text
    assert client.proxy.remove_upstream().success is True
    assert client.proxy.get_upstream().data is None


def test_auth_cmd_credentials_are_used_and_masked(
    client: Sandbox, app_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with recording_proxy(credentials=("bob", SECRET)) as upstream:
        answer = client.proxy.set_upstream(server=upstream.address, auth_cmd=f"printf 'bob:{SECRET}'")
        assert (answer.data.username, answer.data.password) == ("bob", "****")
        diagnosis = client.proxy.diagnose(url="http://site.test/through")
        assert SECRET not in diagnosis.model_dump_json()
    assert isinstance(diagnosis.data, ProxyDiagnoseResult)
    assert (diagnosis.data.route, diagnosis.data.target_reachable, diagnosis.data.status_code) == ("proxy", True, 200)
    expected = "Basic " + base64.b64encode(f"bob:{SECRET}".encode()).decode()
    assert [(r.target, r.authorization) for r in upstream.requests] == [("http://site.test/through", expected)]
    assert SECRET not in caplog.text  # not logged either


def test_diagnose_through_a_working_and_a_dead_proxy(client: Sandbox) -> None:
    with recording_proxy() as upstream:
        client.proxy.set_upstream(server=upstream.address)
        working = client.proxy.diagnose(url="http://example.test/page?q=1").data
    assert working.route == "proxy" and working.resolved_target == upstream.address
    assert working.target_reachable is True and working.status_code == 200 and working.latency_ms >= 0
    assert upstream.targets() == ["http://example.test/page?q=1"]
    dead = f"127.0.0.1:{free_port()}"
    client.proxy.set_upstream(server=dead)
    failed = client.proxy.diagnose(url="http://example.test/").data
    assert (failed.route, failed.resolved_target, failed.target_reachable) == ("proxy", dead, False)
    assert failed.status_code is None and failed.error


def test_mappings_serve_a_local_app_and_excludes_go_direct(client: Sandbox, app_url: str) -> None:
    port = int(app_url.rsplit(":", 1)[1])
    added = client.proxy.add_mapping(source="myapp.test/api", target=f":{port}/v2")
    assert isinstance(added.data, ProxyMappingRoute)
    assert (added.data.source_host, added.data.source_path, added.data.target) == ("myapp.test", "/api", f":{port}/v2")
    assert added.data.internal_port > 0
    assert client.proxy.list_mappings().data == [added.data]
    with recording_proxy() as upstream:
        client.proxy.set_upstream(server=upstream.address)
        mapped = client.proxy.diagnose(url="http://myapp.test/api/users").data
        assert mapped.route == "mapping" and mapped.matched_mapping == added.data
        assert (mapped.resolved_target, mapped.status_code) == (f"127.0.0.1:{port}/v2", 200)
        other_path = client.proxy.diagnose(url="http://myapp.test/other").data
        assert other_path.route == "proxy"
        assert client.proxy.add_exclude(pattern=".internal.test").data == [".internal.test"]
        assert client.proxy.list_excludes().data == [".internal.test"]
        for host in ("internal.test", "db.internal.test"):
            assert client.proxy.diagnose(url=f"http://{host}:{port}/").data.route == "direct"
        assert client.proxy.diagnose(url=f"http://127.0.0.1:{port}/").data.route == "proxy"
        client.proxy.add_exclude(pattern="127.0.0.0/8")
        direct = client.proxy.diagnose(url=f"http://127.0.0.1:{port}/x").data
        assert (direct.route, direct.status_code) == ("direct", 200)
    # the mapped path and the excluded hosts never went there
    assert upstream.targets() == ["http://myapp.test/other", f"http://127.0.0.1:{port}/"]
    assert client.proxy.remove_exclude(pattern=".internal.test").data == ["127.0.0.0/8"]
    client.proxy.remove_mapping(source="myapp.test/api")
    assert client.proxy.list_mappings().data == []


def test_the_pac_file_follows_the_settings_and_holds_no_credentials(client: Sandbox, gateway: str) -> None:
    assert client.browser.get_proxy_pac() is None  # the SDK returns nothing; the text is the answer
    pac = shared_http.get(f"{gateway}/v1/browser/proxy.pac")
    assert pac.headers["content-type"].startswith("application/x-ns-proxy-autoconfig")
    assert "var UPSTREAM = false;" in pac.text and "function FindProxyForURL(url, host)" in pac.text
    client.proxy.set_upstream(server=f"carol:{SECRET}@10.1.2.3:8080")
    client.proxy.add_exclude(pattern="*.corp.test")
    client.proxy.add_mapping(source="https://app.test:8443", target="localhost:3000")
    text = shared_http.get(f"{gateway}/v1/browser/proxy.pac").text
    assert "var UPSTREAM = true;" in text and '"*.corp.test"' in text
    assert '{"host": "app.test", "port": 8443, "scheme": "https"}' in text
    forwarder = client.proxy.list_mappings().data[0].internal_port
    assert f'"PROXY 127.0.0.1:{forwarder}"' in text
    assert SECRET not in text and "carol" not in text and "10.1.2.3" not in text
    # Chromium reads the same file from the loopback forwarder, which the API key does not guard.
    assert shared_http.get(f"http://127.0.0.1:{forwarder}/proxy.pac").text == text
    rebound = shared_http.get(f"http://127.0.0.1:{forwarder}/proxy.pac", headers={"Host": f"evil.test:{forwarder}"})
    assert rebound.status_code == 421
    client.proxy.remove_mapping(source="https://app.test:8443")  # a source with "://" in the path
    assert client.proxy.list_mappings().data == []


def test_the_pac_route_needs_the_api_key(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        assert shared_http.get(f"{url}/v1/browser/proxy.pac").status_code == 401
        assert shared_http.get(f"{url}/v1/proxy/upstream").status_code == 401
        keyed = Sandbox(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        assert keyed.proxy.get_upstream().success is True
        assert (
            shared_http.get(f"{url}/v1/browser/proxy.pac", headers={"Authorization": f"Bearer {KEY}"}).status_code
            == 200
        )


#: (method, path, body, status): refused before anything changes.
BAD_INPUT = [
    ("PUT", "/v1/proxy/upstream", {"server": "socks5://127.0.0.1:1080"}, 400),
    ("PUT", "/v1/proxy/upstream", {"server": "just-a-host"}, 400),
    ("PUT", "/v1/proxy/upstream", {"server": "127.0.0.1:99999"}, 400),
    ("PUT", "/v1/proxy/upstream", {"server": "127.0.0.1:3128", "auth_cmd": "exit 3"}, 400),
    ("PUT", "/v1/proxy/upstream", {"server": "127.0.0.1:3128", "auth_cmd": "echo no-colon"}, 400),
    ("PUT", "/v1/proxy/upstream", {"server": 3128}, 422),
    ("PUT", "/v1/proxy/upstream", {"server": "127.0.0.1:3128", "extra": 1}, 422),
    ("PUT", "/v1/proxy/upstream", {}, 422),
    ("POST", "/v1/proxy/mappings", {"source": "myapp.test", "target": "not-a-port"}, 400),
    ("POST", "/v1/proxy/mappings", {"source": "myapp.test", "target": ":0"}, 400),
    ("POST", "/v1/proxy/mappings", {"source": "myapp.test", "target": ":3000/a b\r\nX-Injected: 1"}, 400),
    ("POST", "/v1/proxy/mappings", {"source": "bad host!", "target": ":3000"}, 400),
    ("POST", "/v1/proxy/mappings", {"source": "ftp://myapp.test", "target": ":3000"}, 400),
    ("POST", "/v1/proxy/mappings", {"source": "myapp.test"}, 422),
    ("DELETE", "/v1/proxy/mappings/never.test", None, 404),
    ("POST", "/v1/proxy/excludes", {"pattern": "no spaces allowed"}, 400),
    ("POST", "/v1/proxy/excludes", {"pattern": ["*.a.test"]}, 422),
    ("DELETE", "/v1/proxy/excludes", {"pattern": "never.test"}, 404),
    ("GET", "/v1/proxy/diagnose?url=ftp://files.test/", None, 400),
    ("GET", "/v1/proxy/diagnose?url=not%20a%20url", None, 400),
    ("GET", "/v1/proxy/diagnose", None, 422),
]


def test_bad_input_is_refused_and_changes_nothing(client: Sandbox, gateway: str) -> None:
    client.proxy.set_upstream(server="127.0.0.1:3128")
    client.proxy.add_exclude(pattern="kept.test")

    def settings() -> list[object]:
        return [
            shared_http.get(f"{gateway}/v1/proxy/{part}").json()["data"]
            for part in ("upstream", "mappings", "excludes")
        ]

    before = settings()
    for method, path, body, status in BAD_INPUT:
        response = shared_http.request(method, f"{gateway}{path}", json=body, timeout=30)
        assert response.status_code == status, (method, path, body, response.text)
        assert response.json()["success"] is False
        assert settings() == before, (method, path, body)


def test_every_route_through_the_async_client(gateway: str, app_url: str) -> None:
    port = int(app_url.rsplit(":", 1)[1])

    async def scenario() -> None:
        client = AsyncSandbox(base_url=gateway, timeout=30)
        with recording_proxy() as upstream:
            info = (await client.proxy.set_upstream(server=f"dave:{SECRET}@{upstream.address}")).data
            assert (info.addr, info.username, info.password) == (upstream.address, "dave", "****")
            assert (await client.proxy.get_upstream()).data == info
            mapping = (await client.proxy.add_mapping(source="*.apps.test", target=f"127.0.0.1:{port}")).data
            assert (await client.proxy.list_mappings()).data == [mapping]
            await client.proxy.add_exclude(pattern="skip.test")
            assert (await client.proxy.list_excludes()).data == ["skip.test"]
            mapped = (await client.proxy.diagnose(url="http://one.apps.test/hi")).data
            assert (mapped.route, mapped.status_code) == ("mapping", 200)
            proxied = (await client.proxy.diagnose(url="http://other.test/")).data
            assert (proxied.route, proxied.status_code) == ("proxy", 200)
            assert await client.browser.get_proxy_pac() is None
            await client.proxy.remove_exclude(pattern="skip.test")
            await client.proxy.remove_mapping(source="*.apps.test")
            await client.proxy.remove_upstream()
            assert (await client.proxy.get_upstream()).data is None
            with pytest.raises(ApiError) as missing:
                await client.proxy.remove_mapping(source="*.apps.test")
            assert missing.value.status_code == 404
        assert upstream.targets() == ["http://other.test/"]
        assert all(
            SECRET not in str(request.authorization) or request.authorization.startswith("Basic")
            for request in upstream.requests
        )

    asyncio.run(scenario())


def _through_tunnel(forwarder: int, authority: str) -> str:
    """CONNECT ``authority`` through the forwarder, then one plain GET inside the tunnel; the answer."""
    with socket.create_connection(("127.0.0.1", forwarder), timeout=10) as sock:
        sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        established = sock.recv(4096).decode()
        assert established.startswith("HTTP/1.1 200"), established
        sock.sendall(f"GET /inside HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks).decode()


def test_tunnels_follow_the_settings_with_credentials_added(client: Sandbox, app_url: str) -> None:
    """What Chromium does for https: CONNECT to the forwarder, which tunnels to the upstream (adding
    ``Proxy-Authorization``), to a mapped port, or directly to an excluded host."""
    port = int(app_url.rsplit(":", 1)[1])
    with recording_proxy(credentials=("frank", SECRET)) as upstream:
        client.proxy.set_upstream(server=f"frank:{SECRET}@{upstream.address}")
        client.proxy.add_mapping(source="tunnel.test", target=f":{port}")
        client.proxy.add_exclude(pattern="127.0.0.1")
        forwarder = client.proxy.list_mappings().data[0].internal_port
        assert "proxied secure.test:443 /inside" in _through_tunnel(forwarder, "secure.test:443")
        assert "app saw tunnel.test:443 /inside" in _through_tunnel(forwarder, "tunnel.test:443")
        assert "app saw 127.0.0.1" in _through_tunnel(forwarder, f"127.0.0.1:{port}")
        plain = httpx.get("http://wrong.test/", proxy=f"http://127.0.0.1:{forwarder}", timeout=10)
    expected = "Basic " + base64.b64encode(f"frank:{SECRET}".encode()).decode()
    assert [(r.method, r.target, r.authorization) for r in upstream.requests[:1]] == [
        ("CONNECT", "secure.test:443", expected)
    ]
    assert plain.status_code == 200 and "proxied http://wrong.test/" in plain.text
    assert len(upstream.requests) == 2
