"""Raw JSON-RPC over HTTP, the way the seed's curl commands talk to ``/mcp``."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.shared_http import shared_client


def rpc(
    url: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    id: int = 1,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> httpx.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return shared_client().post(url, json=body, headers=headers or {}, timeout=timeout)


#: The per-request ``_meta`` envelope of a 2026-07-28 request.
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
}


def modern_headers(name: str, method: str = "tools/call", **extra: str) -> dict[str, str]:
    """The 2026-07-28 routing headers of a request naming ``name``."""
    return {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name, **extra}


def call_tool(url: str, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    """``tools/call`` and return the JSON-RPC ``result`` (asserting HTTP 200 and no error)."""
    response = rpc(url, "tools/call", {"name": name, "arguments": arguments or {}}, **kwargs)
    assert response.status_code == 200, response.text
    payload = response.json()
    assert "error" not in payload, payload
    return payload["result"]


def tool_text(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


def tool_json(result: dict[str, Any]) -> Any:
    return json.loads(tool_text(result))


def list_tool_names(url: str, **kwargs: Any) -> list[str]:
    response = rpc(url, "tools/list", **kwargs)
    assert response.status_code == 200, response.text
    return [tool["name"] for tool in response.json()["result"]["tools"]]
