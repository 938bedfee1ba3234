"""The API token and the MCP token: each guards only its own routes, with no fallback either way;
``/healthz`` is public; settings refuse to start without models."""

from __future__ import annotations

import httpx
import pytest

from agentbox_common.settings import ConfigError
from agentbox_mcp_mode.api_mode.settings import ApiModeSettings
from tests.mcp_mode.helpers import StandIn, mcp_post, sse_json

from .helpers import serve_api

TOOLS = {"run_prompt", "list_files", "read_file", "write_file", "delete_file"}
API_ROUTES = [
    ("GET", "/status"),
    ("GET", "/files"),
    ("GET", "/openai/v1/models"),
    ("GET", "/run/result?runId=x"),
    ("POST", "/run"),
    ("POST", "/openai/v1/chat/completions"),
    ("PUT", "/files/x.txt"),  # written by the allowed request ...
    ("DELETE", "/files/x.txt"),  # ... and deleted by this one
    ("DELETE", "/run/x"),
]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def tool_names(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {tool["name"] for tool in sse_json(response)["result"]["tools"]}


def test_api_token(make_api_settings, workspace) -> None:
    with serve_api(make_api_settings(AICODEBOX_API_MODE_TOKEN="api-secret")) as api:
        assert httpx.get(f"{api}/healthz").json() == {"ok": True, "adapter": "claude"}
        for method, path in API_ROUTES:
            for headers, detail in [
                ({}, "missing bearer token"),
                ({"Authorization": "Basic YXBpLXNlY3JldA=="}, "missing bearer token"),
                ({"Authorization": "api-secret"}, "missing bearer token"),
                (bearer("api-secre"), "invalid bearer token"),
                (bearer("api-secret-and-more"), "invalid bearer token"),
            ]:
                refused = httpx.request(method, api + path, headers=headers, content=b"{}")
                assert refused.status_code == 401, (method, path, headers)
                assert refused.json() == {"detail": detail}
            assert (workspace / "x.txt").exists() == ((method, path) == ("DELETE", "/files/x.txt"))  # unchanged
            allowed = httpx.request(method, api + path, headers=bearer("api-secret"), content=b"{}")
            assert allowed.status_code != 401, (method, path)
        assert httpx.get(f"{api}/status", headers={"authorization": "bearer api-secret"}).status_code == 200


def test_tokens_never_open_each_other(make_api_settings) -> None:
    settings = make_api_settings(
        AICODEBOX_MCP_MODE="1", AICODEBOX_API_MODE_TOKEN="api-secret", AICODEBOX_MCP_MODE_TOKEN="mcp-secret"
    )
    with serve_api(settings) as api:
        for path in ("/mcp", "/mcp/"):
            for headers in ({}, bearer("api-secret")):
                refused = mcp_post(api + path, headers=headers)
                assert refused.status_code == 401 and refused.json() == {"detail": "unauthorized"}
            assert tool_names(mcp_post(api + path, headers=bearer("mcp-secret"))) == TOOLS  # no redirect
            assert tool_names(mcp_post(f"{api}{path}?apiToken=mcp-secret")) == TOOLS
        refused = httpx.get(f"{api}/status", headers=bearer("mcp-secret"))
        assert refused.status_code == 401 and refused.json() == {"detail": "invalid bearer token"}
        assert httpx.get(f"{api}/status?apiToken=mcp-secret").status_code == 401
        assert httpx.get(f"{api}/status", headers=bearer("api-secret")).status_code == 200


def test_empty_mcp_token_leaves_mcp_open(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1", AICODEBOX_API_MODE_TOKEN="api-secret")) as api:
        assert tool_names(mcp_post(f"{api}/mcp/")) == TOOLS
        assert httpx.get(f"{api}/status").status_code == 401


def test_empty_api_token_leaves_the_api_open(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1", AICODEBOX_MCP_MODE_TOKEN="mcp-secret")) as api:
        assert httpx.get(f"{api}/status").status_code == 200
        assert mcp_post(f"{api}/mcp").status_code == 401


def test_mcp_is_mounted_only_with_mcp_mode(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="0")) as api:
        assert mcp_post(f"{api}/mcp/").status_code == 404


def test_mcp_host_checks_apply_to_the_mount(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1")) as api:
        assert mcp_post(f"{api}/mcp", headers={"Host": "evil.example"}).status_code == 421
        assert mcp_post(f"{api}/mcp", headers={"Origin": "http://evil.example"}).status_code == 403
        assert httpx.get(f"{api}/healthz", headers={"Host": "agent.example"}).status_code == 200


def test_tokens_never_reach_the_agent(make_api_settings, stand_in: StandIn, monkeypatch) -> None:
    monkeypatch.setenv("AICODEBOX_API_MODE_TOKEN", "api-secret")
    monkeypatch.setenv("AICODEBOX_MCP_MODE_TOKEN", "mcp-secret")
    with serve_api(make_api_settings(AICODEBOX_API_MODE_TOKEN="api-secret")) as api:
        answer = httpx.post(f"{api}/run", json={"prompt": "hi"}, headers=bearer("api-secret"), timeout=30)
        assert answer.json()["text"] == "echo: hi"
    assert stand_in.calls()[0]["secrets_seen"] == []


@pytest.mark.parametrize("models", ["", " , "])
def test_no_models_is_a_config_error(tmp_path, models: str) -> None:
    env = {"AICODEBOX_WORKSPACE": str(tmp_path / "ws"), "AICODEBOX_AVAILABLE_MODELS": models}
    with pytest.raises(ConfigError, match="AICODEBOX_AVAILABLE_MODELS"):
        ApiModeSettings.from_env(env)
    with pytest.raises(ConfigError, match="AICODEBOX_AVAILABLE_MODELS"):
        ApiModeSettings.from_env({"AICODEBOX_WORKSPACE": str(tmp_path / "ws")})


def test_settings_defaults(tmp_path) -> None:
    settings = ApiModeSettings.from_env(
        {"AICODEBOX_WORKSPACE": str(tmp_path / "ws"), "AICODEBOX_AVAILABLE_MODELS": "a, b"}
    )
    assert (settings.host, settings.port, settings.token) == ("0.0.0.0", 8080, "")
    assert settings.mcp.available_models == ("a", "b") and settings.mcp.mcp_mode is False
    with pytest.raises(ConfigError, match="AICODEBOX_API_MODE_PORT"):
        ApiModeSettings.from_env(
            {"AICODEBOX_WORKSPACE": str(tmp_path / "ws"), "AICODEBOX_AVAILABLE_MODELS": "a",
             "AICODEBOX_API_MODE_PORT": "http"}
        )  # fmt: skip
