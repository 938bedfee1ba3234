"""``/v2/sandbox``, ``/v2/browser/*``, the two OpenAPI documents and docs pages, and
``AIO_API_SURFACE``, driven as aiod's documentation describes them (start/migration.md,
architecture.md): a plain httpx client against a real gateway on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import websockets.sync.client
from websockets.exceptions import InvalidStatus

from agentbox_common.settings import ConfigError
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import free_port, serve_app

KEY = "v2-surface-test-key"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
#: The ``/v1/browser/*`` routes migration.md says still answer, of those agentbox has: every method of
#: info, screenshot, actions, config, tabs, cookies and network/requests (not navigate, click, fill,
#: evaluate, upload, cdp or snapshot, which agentbox serves only under page/ or as /cdp).
SURVIVING = {
    ("GET", "/browser/info"),
    ("GET", "/browser/screenshot"),
    ("POST", "/browser/actions"),
    ("POST", "/browser/config"),
    ("GET", "/browser/tabs"),
    ("POST", "/browser/tabs"),
    ("PUT", "/browser/tabs/{index}/activate"),
    ("DELETE", "/browser/tabs/{index}"),
    ("GET", "/browser/cookies"),
    ("POST", "/browser/cookies"),
    ("DELETE", "/browser/cookies"),
    ("GET", "/browser/network/requests"),
}


def data(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and set(body) >= {"success", "message", "data", "hint"}, body
    return body["data"]


def operations(document: dict[str, Any], prefix: str) -> set[tuple[str, str]]:
    """``(METHOD, path without the surface prefix)`` of every operation under ``prefix``."""
    return {
        (method.upper(), path.removeprefix(prefix))
        for path, item in document["paths"].items()
        if path.startswith(prefix)
        for method in item
    }


@pytest.fixture
def nowhere(gateway_settings: GatewaySettings) -> GatewaySettings:
    """No browser: its CDP port is a free one."""
    return replace(gateway_settings, cdp_url=f"http://127.0.0.1:{free_port()}")


@pytest.fixture
def both(nowhere: GatewaySettings) -> Iterator[httpx.Client]:
    with serve_app(build_app(nowhere)) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


@pytest.fixture
def v2_only(nowhere: GatewaySettings) -> Iterator[httpx.Client]:
    settings = replace(nowhere, api_surface="v2")
    with serve_app(build_app(settings)) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def test_sandbox_is_identity_workspace_and_capabilities_in_one_object(both: httpx.Client) -> None:
    info = data(both.get("/v2/sandbox"))
    assert {"version", "user", "home_dir", "workspace_dir", "os", "arch", "runtimes"} <= set(info)
    assert info["workspace_dir"] and info["home_dir"] and info["api_surfaces"] == ["v1", "v2"]
    capabilities = info["capabilities"]
    assert {"files", "exec", "code_interpreter", "browser"} <= set(capabilities)
    assert isinstance(capabilities["exec"]["pty"]["available"], bool)
    assert capabilities["browser"]["status"] == "absent"  # the CDP port answers nothing
    assert capabilities["exec"]["available"] is True and capabilities["code_interpreter"]["status"]
    v1 = both.get("/v1/sandbox").json()
    assert info["version"] == v1["version"] and info["home_dir"] == v1["home_dir"]
    assert data(both.get("/v2/sandbox", params={"refresh": "true"}))["capabilities"]["exec"]


def test_sandbox_packages_by_lang(both: httpx.Client) -> None:
    packages = data(both.get("/v2/sandbox/packages", params={"lang": "python"}))
    assert packages and all(set(p) == {"name", "version"} and p["name"] for p in packages)
    assert packages == data(both.get("/v1/sandbox/packages/python"))
    for params in ({}, {"lang": "cobol"}):
        answer = both.get("/v2/sandbox/packages", params=params)
        assert answer.status_code == 422 and answer.json()["errors"], answer.text


def test_every_operation_has_an_id_of_its_own(both: httpx.Client) -> None:
    """Client generators key their methods by operationId: one used twice breaks them."""
    for surface in ("v1", "v2"):
        document = both.get(f"/{surface}/openapi.json").json()
        ids = [op["operationId"] for item in document["paths"].values() for op in item.values() if "operationId" in op]
        assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert {"get", "head"} <= set(both.get("/v2/openapi.json").json()["paths"]["/v2/fs/download"])


def test_browser_alias_is_the_surviving_v1_routes(both: httpx.Client) -> None:
    v1 = operations(both.get("/v1/openapi.json").json(), "/v1")
    v2 = operations(both.get("/v2/openapi.json").json(), "/v2")
    v2_browser = {op for op in v2 if op[1].startswith("/browser/")}
    v1_browser = {op for op in v1 if op[1].startswith("/browser/")}
    assert v2_browser == SURVIVING and SURVIVING <= v1_browser
    assert ("GET", "/browser/page/html") in v1 and ("POST", "/browser/restart") in v1
    for path in ("/v2/browser/page/html", "/v2/browser/restart", "/v2/browser/captcha/detect"):
        assert both.request("POST" if path.endswith("restart") else "GET", path).status_code == 404, path
    # Same handler, same answer: with no browser both say so alike.
    for path in ("/browser/info", "/browser/tabs"):
        old, new = both.get(f"/v1{path}"), both.get(f"/v2{path}")
        assert (new.status_code, new.json()) == (old.status_code, old.json()), path
        assert new.status_code == 503 and new.json()["success"] is False
    bad = both.post("/v2/browser/actions", json={"action_type": "NO_SUCH_ACTION"})
    assert bad.status_code == 422 and bad.json()["errors"]


def test_each_surface_has_its_document_and_the_docs_pages_list_both(both: httpx.Client) -> None:
    v1 = both.get("/v1/openapi.json").json()
    v2 = both.get("/v2/openapi.json").json()
    assert v2["openapi"].startswith("3.") and all(path.startswith("/v2/") for path in v2["paths"])
    assert not [path for path in v1["paths"] if path.startswith("/v2/")]
    assert {"/v2/commands", "/v2/commands/{command_id}", "/v2/commands/{command_id}/stdin"} <= set(v2["paths"])
    assert {"/v2/commands/{command_id}/kill", "/v2/commands/sessions", "/v2/sandbox"} <= set(v2["paths"])
    assert "/v1/shell/exec" in v1["paths"]
    run = v2["paths"]["/v2/commands"]["post"]
    assert "application/x-ndjson" in run["responses"]["200"]["content"]
    assert {"401", "422", "429"} <= set(run["responses"])
    for page in ("/v1/docs", "/v2/docs"):
        html = both.get(page).text
        assert 'href="../v1/openapi.json"' in html and 'href="../v2/openapi.json"' in html, page
        assert 'href="../v1/docs"' in html and 'href="../v2/docs"' in html, page


def test_documents_are_public_but_v2_routes_need_the_key(nowhere: GatewaySettings) -> None:
    with serve_app(build_app(replace(nowhere, api_key=KEY))) as url:
        assert httpx.get(f"{url}/v2/openapi.json", timeout=60).status_code == 200
        assert httpx.get(f"{url}/v1/openapi.json", timeout=60).status_code == 200
        for path in ("/v2/sandbox", "/v2/sandbox/packages?lang=python", "/v2/browser/info", "/v2/docs"):
            answer = httpx.get(f"{url}{path}", timeout=60)
            assert answer.status_code == 401 and answer.json()["success"] is False, path
        keyed = httpx.get(f"{url}/v2/sandbox", headers={"x-api-key": KEY}, timeout=60)
        assert data(keyed)["api_surfaces"] == ["v1", "v2"]


def test_v2_surface_hides_v1(v2_only: httpx.Client) -> None:
    for method, path in [
        ("POST", "/v1/shell/exec"),
        ("GET", "/v1/sandbox"),
        ("GET", "/v1/openapi.json"),
        ("GET", "/v1/docs"),
        ("GET", "/v1/browser/info"),
        ("GET", "/v1"),
    ]:
        answer = v2_only.request(method, path, json={"command": "echo hi"} if method == "POST" else None)
        assert answer.status_code == 404, (path, answer.text)
        body = answer.json()
        assert body["success"] is False and "/v2 only" in body["message"] and "AIO_API_SURFACE" in body["hint"]
    url = str(v2_only.base_url).rstrip("/").replace("http://", "ws://")
    with pytest.raises(InvalidStatus) as refused:
        websockets.sync.client.connect(f"{url}/v1/shell/ws", open_timeout=10).close()
    assert refused.value.response.status_code == 404
    # /v2, /mcp and the rest of the gateway are served as ever.
    assert data(v2_only.post("/v2/commands", json={"command": "echo hi"}))["stdout"] == "hi\n"
    assert data(v2_only.get("/v2/sandbox"))["api_surfaces"] == ["v2"]
    assert v2_only.get("/v2/browser/info").status_code == 503
    listed = v2_only.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=MCP_HEADERS)
    assert "sandbox_execute_bash" in {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert v2_only.get("/health").status_code == 200
    document = v2_only.get("/v2/openapi.json").json()
    assert document["paths"] and all(path.startswith("/v2/") for path in document["paths"])
    html = v2_only.get("/v2/docs").text
    assert 'href="../v2/openapi.json"' in html and "../v1/" not in html


@pytest.mark.parametrize(("raw", "surface"), [("both", "both"), ("full", "both"), (" V2 ", "v2")])
def test_api_surface_setting(raw: str, surface: str) -> None:
    assert GatewaySettings.from_env({"AIO_API_SURFACE": raw}).api_surface == surface
    assert GatewaySettings.from_env({}).api_surface == "both"


def test_a_bad_api_surface_is_refused() -> None:
    with pytest.raises(ConfigError, match="AIO_API_SURFACE"):
        GatewaySettings.from_env({"AIO_API_SURFACE": "v1"})
