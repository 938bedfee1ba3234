"""``AIO_API_KEY``, the Origin check and the Host check (DNS rebinding), across MCP, REST, CDP and health."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import replace

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agentbox_gateway.app import build_app
from agentbox_gateway.auth.guards import host_allowed, origin_allowed
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.jsonrpc import rpc
from tests.support.servers import serve_app

KEY = "s3cret-key-for-tests"


@pytest.fixture
def keyed_gateway(gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # The key is in the gateway's own environment too, as in the image: it must still not leak.
    monkeypatch.setenv("AIO_API_KEY", KEY)
    settings = replace(
        gateway_settings, api_key=KEY, allowed_origins=("https://agent.example.com", "http://tools.example.com:*")
    )
    with serve_app(build_app(settings)) as url:
        yield url


def bearer(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_mcp_needs_the_key(keyed_gateway: str) -> None:
    url = f"{keyed_gateway}/mcp"
    assert rpc(url, "tools/list").status_code == 401
    assert rpc(url, "tools/list", headers=bearer("wrong")).status_code == 401
    assert rpc(url, "tools/list", headers={"Authorization": KEY}).status_code == 401
    ok = rpc(url, "tools/list", headers=bearer())
    assert ok.status_code == 200 and len(ok.json()["result"]["tools"]) >= 10


def test_the_mcp_notification_stream_needs_the_key(keyed_gateway: str) -> None:
    url, accept = f"{keyed_gateway}/mcp", {"Accept": "text/event-stream"}
    assert shared_http.get(url, headers=accept).status_code == 401
    with httpx.stream("GET", url, headers={**accept, **bearer()}, timeout=10) as opened:
        assert opened.status_code == 200 and opened.headers["content-type"].startswith("text/event-stream")


def test_rest_needs_the_key_and_health_does_not(keyed_gateway: str) -> None:
    assert shared_http.get(f"{keyed_gateway}/health").status_code == 200
    denied = shared_http.get(f"{keyed_gateway}/v1/sandbox")
    assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Bearer")
    assert shared_http.get(f"{keyed_gateway}/v1/sandbox", headers=bearer()).status_code == 200


def test_without_a_key_everything_is_open(gateway: str) -> None:
    assert rpc(f"{gateway}/mcp", "tools/list").status_code == 200


def test_the_key_never_reaches_sandboxed_programs(keyed_gateway: str) -> None:
    url = f"{keyed_gateway}/mcp"
    assert os.environ["AIO_API_KEY"] == KEY
    shell = rpc(
        url,
        "tools/call",
        {"name": "sandbox_execute_bash", "arguments": {"cmd": 'env; echo "key=[$AIO_API_KEY]"'}},
        headers=bearer(),
    )
    output = json.loads(shell.json()["result"]["content"][0]["text"])["output"]
    assert "key=[]" in output and KEY not in output
    code = rpc(
        url,
        "tools/call",
        {
            "name": "sandbox_execute_code",
            "arguments": {"code": "import os\nprint(repr(os.environ.get('AIO_API_KEY')))"},
        },
        headers=bearer(),
    )
    assert code.json()["result"]["content"][0]["text"].strip() == "None"
    node = rpc(
        url,
        "tools/call",
        {
            "name": "sandbox_execute_code",
            "arguments": {"language": "javascript", "code": "console.log(String(process.env.AIO_API_KEY))"},
        },
        headers=bearer(),
    )
    assert node.json()["result"]["content"][0]["text"].strip() == "undefined"


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example.com",
        "null",
        "http://127.0.0.1.evil.com",
        "http://tools.example.com",
        "https://agent.example.com:8443",
    ],
)
def test_foreign_origins_are_refused(keyed_gateway: str, origin: str) -> None:
    headers = {**bearer(), "Origin": origin}
    assert rpc(f"{keyed_gateway}/mcp", "tools/list", headers=headers).status_code == 403
    assert shared_http.get(f"{keyed_gateway}/v1/sandbox", headers=headers).status_code == 403


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost:3000",
        "http://127.0.0.1:8080",
        "http://[::1]:5173",
        "https://agent.example.com",
        "http://tools.example.com:9000",
    ],
)
def test_loopback_and_listed_origins_are_served(keyed_gateway: str, origin: str) -> None:
    headers = {**bearer(), "Origin": origin}
    assert rpc(f"{keyed_gateway}/mcp", "tools/list", headers=headers).status_code == 200


REBOUND = "rebind.attacker.example:18091"
#: A WebSocket upgrade, spelled out so that the refused handshake's HTTP answer can be read.
UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def guarded_requests(base: str, host: str, headers: dict[str, str] | None = None) -> list[httpx.Response]:
    """A rebound page's reads: a file, Chromium's targets, an MCP call and the CDP WebSocket."""
    headers = {"Host": host, **(headers or {})}
    return [
        shared_http.get(f"{base}/v1/file/download", params={"path": "/etc/hostname"}, headers=headers),
        shared_http.get(f"{base}/cdp/json/list", headers=headers),
        rpc(f"{base}/mcp", "tools/list", headers=headers),
        shared_http.get(f"{base}/cdp/devtools/browser/some-id", headers={**headers, **UPGRADE}),
    ]


def test_a_rebound_host_gets_421_everywhere_without_a_key(gateway: str) -> None:
    download, cdp_list, mcp, socket_ = guarded_requests(gateway, REBOUND)
    for refused in (download, cdp_list, socket_):
        assert refused.status_code == 421, refused.text
        assert refused.json()["message"] == "Misdirected request: Host not allowed"
        assert "AIO_ALLOWED_HOSTS" in refused.json()["hint"]
    assert mcp.status_code == 421
    assert mcp.json()["error"]["code"] == -32600 and "Host not allowed" in mcp.json()["error"]["message"]
    assert shared_http.get(f"{gateway}/health", headers={"Host": "rebind.attacker.example"}).status_code == 421


@pytest.mark.parametrize(
    "host",
    [
        "localhost:3000",
        "127.0.0.1",
        "127.0.0.2:80",
        "[::1]:8091",
        "LOCALHOST",
        "app.localhost:1",
        socket.gethostname(),
        f"{socket.getfqdn()}:8091",
    ],
)
def test_loopback_and_own_names_are_served(gateway: str, host: str) -> None:
    download, cdp_list, mcp, _ = guarded_requests(gateway, host)
    assert download.status_code == 200 and download.content.strip()
    assert cdp_list.status_code == 503  # served: there is no Chromium behind this gateway
    assert mcp.status_code == 200


def test_allowed_hosts_are_served_exactly_or_on_any_port(gateway_settings: GatewaySettings) -> None:
    settings = replace(gateway_settings, allowed_hosts=("agentbox", "proxy.example.com:*", "fixed.example:8443"))
    with serve_app(build_app(settings)) as url:
        for host in ("agentbox", "AgentBox", "proxy.example.com", "proxy.example.com:443", "fixed.example:8443"):
            assert rpc(f"{url}/mcp", "tools/list", headers={"Host": host}).status_code == 200, host
        for host in ("agentbox:8091", "fixed.example", "fixed.example:1", "evil.proxy.example.com", REBOUND):
            assert rpc(f"{url}/mcp", "tools/list", headers={"Host": host}).status_code == 421, host


def test_with_a_key_host_is_checked_only_when_allowed_hosts_is_set(
    keyed_gateway: str, gateway_settings: GatewaySettings
) -> None:
    for response in guarded_requests(keyed_gateway, REBOUND, bearer())[::2]:
        assert response.status_code == 200
    settings = replace(gateway_settings, api_key=KEY, allowed_hosts=("sandbox.example.com",))
    with serve_app(build_app(settings)) as url:
        assert all(r.status_code == 421 for r in guarded_requests(url, REBOUND, bearer()))
        assert rpc(f"{url}/mcp", "tools/list", headers={**bearer(), "Host": "sandbox.example.com"}).status_code == 200
        assert rpc(f"{url}/mcp", "tools/list", headers=bearer()).status_code == 200  # 127.0.0.1:<port>


def test_host_pattern_matching() -> None:
    assert host_allowed("[::1]", []) and host_allowed("localhost:1", [])
    assert host_allowed("box", [], own_names={"box"}) and host_allowed("box:9", [], own_names={"box"})
    assert host_allowed("a.example:12", ["a.example:*"]) and not host_allowed("a.example:x", ["a.example:*"])
    for junk in ("", "a b", "[::1", "[zz]:1", "a/b", "127.0.0.1:1:2", "a.example:1x"):
        assert not host_allowed(junk, ["a.example:*", "a b"]), junk


def test_a_wrong_key_on_the_cdp_websocket_is_401_with_a_body(keyed_gateway: str) -> None:
    for headers in ({}, bearer("wrong")):
        response = shared_http.get(f"{keyed_gateway}/cdp/devtools/browser/x", headers={**UPGRADE, **headers})
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["message"] == "Unauthorized: missing or invalid API key"


def test_origin_pattern_matching() -> None:
    assert not origin_allowed("http://localhost", [])  # another loopback page is foreign too (issue 26)
    assert origin_allowed("https://app.example.com:4443", ["https://app.example.com:*"])
    assert not origin_allowed("https://app.example.com:evil", ["https://app.example.com:*"])
    assert not origin_allowed("https://app.example.com.evil.net:1", ["https://app.example.com:*"])
    assert not origin_allowed("file://", [])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_tells_401_from_413(keyed_gateway: str, mode: str) -> None:
    """Clients built on mcp 2.x surface the JSON-RPC error of a refusal, so its words must differ."""
    url = f"{keyed_gateway}/mcp"
    async with httpx2.AsyncClient(headers=bearer("wrong"), timeout=30) as http:
        with pytest.raises(BaseException) as unauthorized:  # the connect fails: an MCPError in a group
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                await client.list_tools()
    error = unauthorized.value
    while isinstance(error, BaseExceptionGroup):
        [error] = error.exceptions
    assert isinstance(error, MCPError)
    assert error.error.message.startswith("Unauthorized: missing or invalid API key")
    async with httpx2.AsyncClient(headers=bearer(), timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            with pytest.raises(MCPError) as too_large:
                await client.call_tool("sandbox_execute_bash", {"cmd": "x" * (8 * 1024 * 1024)})
    assert too_large.value.error.message == "Request body too large: /mcp accepts at most 8 MiB"
