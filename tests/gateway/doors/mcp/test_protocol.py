"""Protocol edges of the gateway's /mcp: errors the seed names, stateless handling, limits."""

from __future__ import annotations

import json
import urllib.request

from tests.support import shared_http
from tests.support.jsonrpc import rpc

JSON = {"Content-Type": "application/json"}


def test_missing_tool_name_is_invalid_params(mcp_url: str) -> None:
    body = rpc(mcp_url, "tools/call", {"arguments": {}}, id=11)
    assert body.status_code == 200
    payload = body.json()
    assert payload["id"] == 11 and payload["error"]["code"] == -32602


def test_unknown_method_is_method_not_found_on_200(mcp_url: str) -> None:
    response = rpc(mcp_url, "sandbox/explode", id=12)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32601 and response.json()["id"] == 12


def test_malformed_json_is_a_parse_error(mcp_url: str) -> None:
    response = shared_http.post(mcp_url, content=b'{"jsonrpc": "2.0", "id": 1, "method": ', headers=JSON)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


def test_body_over_8_mib_is_413(mcp_url: str) -> None:
    padding = "x" * (8 * 1024 * 1024 + 1)
    body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"pad":"' + padding + '"}}}'
    assert shared_http.post(mcp_url, content=body, headers=JSON, timeout=60).status_code == 413


def test_body_just_under_the_limit_is_served(mcp_url: str) -> None:
    content = "y" * (7 * 1024 * 1024)
    response = rpc(
        mcp_url,
        "tools/call",
        {
            "name": "sandbox_file_operations",
            "arguments": {"action": "write", "path": "/tmp/agentbox-big.txt", "content": content},
        },
    )
    assert response.status_code == 200 and response.json()["result"]["isError"] is False


def test_initialize_is_answered_without_a_session(mcp_url: str) -> None:
    response = rpc(
        mcp_url,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    result = response.json()["result"]
    assert result["protocolVersion"] == "2025-06-18" and result["serverInfo"]["name"] == "agentbox"
    assert "tools" in result["capabilities"]


def test_notification_is_accepted_with_202(mcp_url: str) -> None:
    response = shared_http.post(mcp_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=JSON)
    assert response.status_code == 202 and response.content == b""


def test_health_is_public_json(gateway: str) -> None:
    response = shared_http.get(f"{gateway}/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_a_post_without_accept_is_served_as_accept_anything(mcp_url: str) -> None:
    """Python's urllib sends no ``Accept`` at all; curl sends ``*/*``: both are served."""
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).encode()
    request = urllib.request.Request(mcp_url, data=body, headers={"Content-Type": "application/json"})
    assert request.get_header("Accept") is None
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert json.loads(response.read())["result"]["tools"]


def test_http_level_refusals_on_mcp_are_json_rpc_errors(mcp_url: str) -> None:
    too_big = shared_http.post(mcp_url, content=b"x" * (8 * 1024 * 1024 + 1), headers=JSON, timeout=60)
    assert too_big.status_code == 413 and too_big.headers["content-type"] == "application/json"
    assert too_big.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Request body too large: /mcp accepts at most 8 MiB"},
    }
    no_json = shared_http.post(mcp_url, content=b"{}", headers={"Content-Type": "text/plain"})
    assert no_json.status_code == 400 and no_json.json()["error"]["message"] == "Invalid Content-Type header"
    refused = shared_http.post(mcp_url, json={}, headers={"Accept": "text/html"})
    assert refused.status_code == 406 and refused.json()["error"]["code"] == -32600
