"""``AIO_API_KEY`` and the Origin check, across MCP, REST and health."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.security import origin_allowed
from agentbox_gateway.settings import GatewaySettings
from tests.support.jsonrpc import rpc
from tests.support.servers import serve_app

KEY = "s3cret-key-for-tests"


@pytest.fixture
def keyed_gateway(gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # The key is in the gateway's own environment too, as in the image: it must still not leak.
    monkeypatch.setenv("AIO_API_KEY", KEY)
    settings = replace(gateway_settings, api_key=KEY, allowed_origins=("https://agent.example.com",
                                                                       "http://tools.example.com:*"))
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


def test_rest_needs_the_key_and_health_does_not(keyed_gateway: str) -> None:
    assert httpx.get(f"{keyed_gateway}/health").status_code == 200
    denied = httpx.get(f"{keyed_gateway}/v1/sandbox")
    assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(f"{keyed_gateway}/v1/sandbox", headers=bearer()).status_code == 200


def test_without_a_key_everything_is_open(gateway: str) -> None:
    assert rpc(f"{gateway}/mcp", "tools/list").status_code == 200


def test_the_key_never_reaches_sandboxed_programs(keyed_gateway: str) -> None:
    url = f"{keyed_gateway}/mcp"
    assert os.environ["AIO_API_KEY"] == KEY
    shell = rpc(url, "tools/call", {"name": "sandbox_execute_bash",
                                    "arguments": {"cmd": "env; echo \"key=[$AIO_API_KEY]\""}}, headers=bearer())
    output = json.loads(shell.json()["result"]["content"][0]["text"])["output"]
    assert "key=[]" in output and KEY not in output
    code = rpc(url, "tools/call", {"name": "sandbox_execute_code", "arguments": {
        "code": "import os\nprint(repr(os.environ.get('AIO_API_KEY')))"}}, headers=bearer())
    assert code.json()["result"]["content"][0]["text"].strip() == "None"
    node = rpc(url, "tools/call", {"name": "sandbox_execute_code", "arguments": {
        "language": "javascript", "code": "console.log(String(process.env.AIO_API_KEY))"}}, headers=bearer())
    assert node.json()["result"]["content"][0]["text"].strip() == "undefined"


@pytest.mark.parametrize("origin", ["https://evil.example.com", "null", "http://127.0.0.1.evil.com",
                                    "http://tools.example.com", "https://agent.example.com:8443"])
def test_foreign_origins_are_refused(keyed_gateway: str, origin: str) -> None:
    headers = {**bearer(), "Origin": origin}
    assert rpc(f"{keyed_gateway}/mcp", "tools/list", headers=headers).status_code == 403
    assert httpx.get(f"{keyed_gateway}/v1/sandbox", headers=headers).status_code == 403


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:5173",
                                    "https://agent.example.com", "http://tools.example.com:9000"])
def test_loopback_and_listed_origins_are_served(keyed_gateway: str, origin: str) -> None:
    headers = {**bearer(), "Origin": origin}
    assert rpc(f"{keyed_gateway}/mcp", "tools/list", headers=headers).status_code == 200


def test_host_header_is_not_restricted(gateway: str) -> None:
    """Reached by container names and through reverse proxies: any Host is fine."""
    for host in ("agentbox:8091", "sandbox.example.com", "10.0.0.5"):
        assert rpc(f"{gateway}/mcp", "tools/list", headers={"Host": host}).status_code == 200


def test_origin_pattern_matching() -> None:
    assert origin_allowed("http://localhost", [])
    assert origin_allowed("https://app.example.com:4443", ["https://app.example.com:*"])
    assert not origin_allowed("https://app.example.com:evil", ["https://app.example.com:*"])
    assert not origin_allowed("https://app.example.com.evil.net:1", ["https://app.example.com:*"])
    assert not origin_allowed("file://", [])
