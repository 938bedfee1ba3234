"""Token, Host and Origin checks of MCP mode with raw HTTP, and start-up refusal of bad lists."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from agentbox_common.settings import ConfigError
from agentbox_mcp_mode.settings import McpModeSettings
from tests.support.servers import console_script, free_port, run_command

from .helpers import MCP_HEADERS, mcp_post, serve_settings, sse_json

TOOLS = ["run_prompt", "list_files", "read_file", "write_file", "delete_file"]


def tool_names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, (response.status_code, response.text)
    return [tool["name"] for tool in sse_json(response)["result"]["tools"]]


def test_token_as_bearer_or_query(make_settings) -> None:
    with serve_settings(make_settings(AICODEBOX_MCP_MODE_TOKEN="s3cret-token")) as base:
        for url in (f"{base}/", f"{base}/mcp"):
            missing = mcp_post(url)
            assert missing.status_code == 401
            assert missing.json() == {"detail": "unauthorized"}
            wrong = mcp_post(url, headers={"Authorization": "Bearer nope"})
            assert (wrong.status_code, wrong.json()) == (401, {"detail": "unauthorized"})
            assert tool_names(mcp_post(url, headers={"Authorization": "Bearer s3cret-token"})) == TOOLS
            assert tool_names(mcp_post(f"{url}?apiToken=s3cret-token")) == TOOLS
            assert tool_names(mcp_post(f"{url}?x=1&apiToken=s3cret-token")) == TOOLS
            assert mcp_post(f"{url}?apiToken=s3cret").status_code == 401
            assert mcp_post(f"{url}?apiToken=s3cret-token-longer").status_code == 401
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 200 and health.json() == {"ok": True, "adapter": "claude"}


def test_no_fallback_between_mcp_and_api_tokens(make_settings) -> None:
    separate = make_settings(AICODEBOX_MCP_MODE_TOKEN="mcp-token", AICODEBOX_API_MODE_TOKEN="api-token")
    with serve_settings(separate) as base:
        assert mcp_post(f"{base}/mcp", headers={"Authorization": "Bearer api-token"}).status_code == 401
        assert mcp_post(f"{base}/mcp?apiToken=api-token").status_code == 401
    open_mcp = make_settings(AICODEBOX_MCP_MODE_TOKEN="", AICODEBOX_API_MODE_TOKEN="api-token")
    with serve_settings(open_mcp) as base:
        assert tool_names(mcp_post(f"{base}/mcp")) == TOOLS


def test_default_hosts_and_origins(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        port = urlsplit(base).port
        for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", "localhost:8081", "[::1]", "[::1]:80"):
            assert tool_names(mcp_post(url, headers={"Host": host})) == TOOLS, host
        bad_host = mcp_post(url, headers={"Host": "evil.example.com"})
        assert (bad_host.status_code, bad_host.text) == (421, "Invalid Host header")
        assert mcp_post(url, headers={"Host": "agent.example.com:8081"}).status_code == 421
        loopback = (f"http://127.0.0.1:{port}", "http://localhost:3000", "http://[::1]:9")
        # a browser sends no port for 80 and 443, and a local page may well be served over https
        no_port = ("http://127.0.0.1", "https://127.0.0.1", "http://localhost", "https://localhost")
        https = ("https://localhost:3000", "https://[::1]", "https://[::1]:8443", "http://[::1]")
        for origin in (*loopback, *no_port, *https):
            assert tool_names(mcp_post(url, headers={"Origin": origin})) == TOOLS, origin
        for origin in (
            "http://evil.example.com",
            "http://localhost.evil.example.com",
            "https://127.0.0.1.evil.example.com:443",
            "ftp://localhost",
            "null",
        ):
            bad_origin = mcp_post(url, headers={"Origin": origin})
            assert (bad_origin.status_code, bad_origin.text) == (403, "Invalid Origin header"), origin


def test_token_is_checked_before_host(make_settings) -> None:
    with serve_settings(make_settings(AICODEBOX_MCP_MODE_TOKEN="t0ken")) as base:
        assert mcp_post(f"{base}/mcp", headers={"Host": "evil.example.com"}).status_code == 401
        authed = mcp_post(f"{base}/mcp", headers={"Host": "evil.example.com", "Authorization": "Bearer t0ken"})
        assert authed.status_code == 421


@contextlib.contextmanager
def proxied_mcp(make_settings: Callable[..., McpModeSettings], hosts: str, origins: str) -> Iterator[str]:
    """The ``/mcp`` URL of MCP mode told a reverse proxy's ``hosts`` and ``origins`` (replacing its
    loopback defaults)."""
    settings = make_settings(AICODEBOX_MCP_MODE_ALLOWED_HOSTS=hosts, AICODEBOX_MCP_MODE_ALLOWED_ORIGINS=origins)
    with serve_settings(settings) as base:
        yield f"{base}/mcp"


def test_proxy_host_and_origin_lists_replace_the_defaults(make_settings) -> None:
    with proxied_mcp(make_settings, " agent.example.com , 127.0.0.1:* ", "https://agent.example.com") as url:
        assert tool_names(mcp_post(url, headers={"Host": "agent.example.com"})) == TOOLS
        assert tool_names(mcp_post(url)) == TOOLS  # 127.0.0.1:<port> via the :* entry
        assert mcp_post(url, headers={"Host": "localhost:8081"}).status_code == 421  # defaults replaced
        assert mcp_post(url, headers={"Host": "127.0.0.1"}).status_code == 421  # bare host needs its own entry
        assert mcp_post(url, headers={"Host": "agent.example.com:8443"}).status_code == 421
        assert tool_names(mcp_post(url, headers={"Origin": "https://agent.example.com"})) == TOOLS
        assert mcp_post(url, headers={"Origin": "http://localhost:3000"}).status_code == 403
        assert mcp_post(url, headers={"Origin": "http://agent.example.com"}).status_code == 403


def test_port_wildcard(make_settings) -> None:
    with proxied_mcp(make_settings, "agent.example.com:*", "https://agent.example.com:*") as url:
        headers = {"Host": "agent.example.com:8443"}
        assert tool_names(mcp_post(url, headers=headers)) == TOOLS
        assert mcp_post(url, headers={"Host": "agent.example.com"}).status_code == 421
        assert mcp_post(url, headers={"Host": "other.example.com:8443"}).status_code == 421
        ok = mcp_post(url, headers={**headers, "Origin": "https://agent.example.com:9443"})
        assert tool_names(ok) == TOOLS
        assert mcp_post(url, headers={**headers, "Origin": "https://agent.example.com"}).status_code == 403


@pytest.mark.parametrize("variable", ["AICODEBOX_MCP_MODE_ALLOWED_HOSTS", "AICODEBOX_MCP_MODE_ALLOWED_ORIGINS"])
@pytest.mark.parametrize("value", ["", " , "])
def test_empty_list_is_a_config_error(make_settings, variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        make_settings(**{variable: value})


def start_refused(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``agentbox-mcp-mode`` run with ``env`` (and none of this machine's AICODEBOX_ settings) until it
    exits, as it must at once on a bad configuration: its exit status and output."""
    return subprocess.run(
        [console_script("agentbox-mcp-mode")],
        env={**_base_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("variable", ["AICODEBOX_MCP_MODE_ALLOWED_HOSTS", "AICODEBOX_MCP_MODE_ALLOWED_ORIGINS"])
def test_console_script_refuses_to_start_with_an_empty_list(tmp_path, variable: str) -> None:
    env = {
        "AICODEBOX_WORKSPACE": str(tmp_path / "ws"),
        "AICODEBOX_MCP_MODE_PORT": str(free_port()),
        variable: "",
    }
    done = start_refused(env)
    assert done.returncode == 2
    assert variable in done.stderr and "refusing to start" in done.stderr


def test_console_script_refuses_an_unknown_adapter(tmp_path) -> None:
    env = {"AICODEBOX_WORKSPACE": str(tmp_path / "ws"), "AICODEBOX_ADAPTER": "nosuch"}
    done = start_refused(env)
    assert done.returncode == 2 and "AICODEBOX_ADAPTER" in done.stderr


def test_console_script_serves_root_and_mcp_without_redirects(tmp_path, stand_in) -> None:
    port = free_port()
    env = {
        "AICODEBOX_WORKSPACE": str(tmp_path / "ws"),
        "AICODEBOX_MCP_MODE_PORT": str(port),
        "AICODEBOX_MCP_MODE_HOST": "127.0.0.1",
        "AICODEBOX_MCP_MODE_TOKEN": "tok",
        "AICODEBOX_AGENT_BINARY": str(stand_in.path),
    }
    base = f"http://127.0.0.1:{port}"
    with run_command([console_script("agentbox-mcp-mode")], env=env, ready_url=f"{base}/healthz"):
        assert httpx.get(f"{base}/healthz").json() == {"ok": True, "adapter": "claude"}
        for path in ("/", "/mcp", "/mcp/"):
            assert tool_names(mcp_post(base + path, headers={"Authorization": "Bearer tok"})) == TOOLS, path
            assert mcp_post(base + path).status_code == 401
        called = mcp_post(
            f"{base}/mcp",
            "tools/call",
            {"name": "run_prompt", "arguments": {"prompt": "hi"}},
            headers={"Authorization": "Bearer tok"},
        )
        result = sse_json(called)["result"]
        assert result["isError"] is False and result["content"][0]["text"] == "echo: hi"
    assert stand_in.calls()[0]["secrets_seen"] == []  # the MCP token never reaches the agent


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AICODEBOX_")}


def test_settings_defaults(tmp_path) -> None:
    settings = McpModeSettings.from_env({"AICODE_WORKSPACE": str(tmp_path / "legacy" / "ws")})
    assert settings.workspace == (tmp_path / "legacy" / "ws").resolve() and settings.workspace.is_dir()
    assert (settings.host, settings.port, settings.token, settings.adapter) == ("0.0.0.0", 8081, "", "claude")
    assert settings.allowed_hosts == (
        "127.0.0.1",
        "127.0.0.1:*",
        "localhost",
        "localhost:*",
        "[::1]",
        "[::1]:*",
    )
    assert set(settings.allowed_origins) == {
        f"{scheme}://{host}{port}"
        for scheme in ("http", "https")
        for host in ("127.0.0.1", "localhost", "[::1]")
        for port in ("", ":*")
    }
    assert (settings.max_concurrent_runs, settings.max_upload_bytes) == (8, 1024**3)
    assert settings.json_retries == 3 and settings.available_models == ()


def test_session_ids_carry_128_random_bits(make_settings) -> None:
    """A handshake-era ``initialize`` gets an ``Mcp-Session-Id`` of 32 hex digits, every one of them
    random: no UUID version digit (index 12) or variant bits (index 16) fixed across many ids."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    with serve_settings(make_settings()) as base, httpx.Client(timeout=30) as http:
        ids = [http.post(f"{base}/mcp", json=body, headers=MCP_HEADERS).headers["mcp-session-id"] for _ in range(64)]
    assert len(set(ids)) == len(ids)
    assert all(len(value) == 32 and set(value) <= set("0123456789abcdef") for value in ids), ids
    assert len({value[12] for value in ids}) > 1, "a fixed version digit: only 124 bits or fewer are random"
    assert not all(value[16] in "89ab" for value in ids), "fixed variant bits: only 122 bits are random"
