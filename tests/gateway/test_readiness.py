"""Start-up that tells the truth: ``/ready`` is green only when every registered MCP server serves its
tools, ``tools/list`` tells 2026-07-28 clients how long its answer holds, and a client listening with
``subscriptions/listen`` hears when an upstream's tools arrive and when they go away. ``/health`` stays
the cheap liveness answer. The browser program (the server at ``AGENTBOX_BROWSER_URL``) stays off
``/ready`` unless ``BROWSER_START_MODE=auto``, and the body says whether it serves yet."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.subscriptions import ToolsListChanged

from agentbox_common.settings import ConfigError
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.planes.browser.test_launch import accepts, start_dir, wrapped_upstream
from tests.gateway.upstreams.test_aggregation_fakes import tool, upstream_process
from tests.support import shared_http
from tests.support.jsonrpc import MODERN_META
from tests.support.servers import free_port, serve_app

KEY = "k" * 32


@pytest.fixture
def late_port() -> int:
    """The port of an upstream registered before it starts (as the browser program is)."""
    return free_port()


@pytest.fixture
def gateway(tmp_path: Path, late_port: int) -> Iterator[str]:
    settings = replace(
        GatewaySettings.from_env({}),
        skills_path=tmp_path,
        mcp_servers={"late": {"url": f"http://127.0.0.1:{late_port}/mcp", "prefix": "late"}},
        upstream_list_cache_ttl=1.0,
    )
    with serve_app(build_app(settings)) as url:
        yield url


def test_ready_waits_for_every_upstream_while_health_does_not(gateway: str, late_port: int) -> None:
    with httpx.Client(base_url=gateway, timeout=10) as http:
        assert http.get("/health").status_code == 200
        starting = http.get("/ready")
        assert starting.status_code == 503
        assert starting.json()["status"] == "starting" and starting.json()["waiting"] == ["late"]
        assert starting.json()["waiting_count"] == 1  # no key set: everyone may see the names
        with upstream_process(late_port, "late", ["hello", "world"]):
            ready = http.get("/ready")
            assert ready.status_code == 200, ready.text
            assert ready.json()["status"] == "ready" and ready.json()["waiting"] == []
            listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
            assert {"late_hello", "late_world"} <= {t["name"] for t in listed["result"]["tools"]}
        gone = http.get("/ready")
        assert gone.status_code == 503 and gone.json()["waiting"] == ["late"]


def test_no_call_after_ready_sees_fewer_tools_than_the_final_list(gateway: str, late_port: int) -> None:
    """The issue's start-up rule, on the gateway: poll ``/ready`` and ``tools/list`` together while
    the upstream starts; once ``/ready`` said ok, every list is the whole one."""
    seen: list[tuple[bool, int]] = []
    with httpx.Client(base_url=gateway, timeout=10) as http, upstream_process(late_port, "late", ["a", "b", "c"]):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(ok for ok, _ in seen) < 5:
            ok = http.get("/ready").status_code == 200
            listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
            seen.append((ok, len(listed["result"]["tools"])))
    final = seen[-1][1]
    assert seen and seen[-1][0], seen
    assert all(count == final for ok, count in seen[next(i for i, (ok, _) in enumerate(seen) if ok) :]), seen


def browser_gateway(tmp_path: Path, port: int, mode: str, **changes: object) -> AbstractContextManager[str]:
    """A gateway whose browser program (an upstream at its ``browser_url``) is registered before it starts."""
    settings = replace(
        GatewaySettings.from_env({}),
        skills_path=tmp_path,
        browser_url=f"http://127.0.0.1:{port}",
        mcp_servers={"browser": {"url": f"http://127.0.0.1:{port}/mcp"}},
        browser_start_mode=mode,
        upstream_list_cache_ttl=1.0,
        **changes,
    )
    return serve_app(build_app(settings))


def test_async_start_keeps_the_browser_off_ready_and_says_where_it_is(tmp_path: Path, late_port: int) -> None:
    with browser_gateway(tmp_path, late_port, "async") as url, httpx.Client(base_url=url, timeout=10) as http:
        starting = http.get("/ready")
        assert starting.status_code == 200, starting.text
        assert starting.json() | {"version": None} == {
            "status": "ready",
            "version": None,
            "waiting": [],
            "browser": "starting",
            "waiting_count": 0,
        }
        with upstream_process(late_port, "browser", ["browser_navigate"]):
            ready = http.get("/ready").json()
            assert ready["status"] == "ready" and ready["browser"] == "ready", ready
            listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
            assert "browser_navigate" in {t["name"] for t in listed["result"]["tools"]}
        assert http.get("/ready").json()["browser"] == "starting"


def test_auto_start_waits_for_the_browser(tmp_path: Path, late_port: int) -> None:
    with browser_gateway(tmp_path, late_port, "auto") as url, httpx.Client(base_url=url, timeout=10) as http:
        starting = http.get("/ready")
        assert starting.status_code == 503
        assert starting.json()["waiting"] == ["browser"] and starting.json()["browser"] == "starting"
        with upstream_process(late_port, "browser", ["browser_navigate"]):
            ready = http.get("/ready")
            assert ready.status_code == 200 and ready.json()["browser"] == "ready", ready.text


def test_manual_start_serves_the_built_tools_and_starts_the_browser_on_the_first_call(
    tmp_path: Path, late_port: int
) -> None:
    """``manual``: /ready is green and says ``not started``, the list already holds the page tools
    (the catalogue the image's build wrote), and the first call starts the program and is answered by it."""
    catalogue = tmp_path / "browser-tools.json"
    catalogue.write_text(json.dumps([tool("browser_navigate")]))
    folder = start_dir(tmp_path)
    with (
        wrapped_upstream(late_port, folder),
        browser_gateway(
            tmp_path, late_port, "manual", browser_tools_catalogue=catalogue, start_on_use_dir=str(folder)
        ) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        idle = http.get("/ready")
        assert idle.status_code == 200 and idle.json()["browser"] == "not started", idle.text
        listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).json()
        assert "browser_navigate" in {t["name"] for t in listed["result"]["tools"]}
        assert not accepts(late_port)
        call = {"name": "browser_navigate", "arguments": {"url": "about:blank"}}
        answer = http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}).json()
        assert answer["result"]["content"][0]["text"] == 'browser:browser_navigate:{"url": "about:blank"}', answer
        assert http.get("/ready").json()["browser"] == "ready"


def test_the_browsers_state_is_for_key_holders(tmp_path: Path, late_port: int) -> None:
    with browser_gateway(tmp_path, late_port, "async", api_key=KEY) as url:
        stranger = shared_http.get(f"{url}/ready", timeout=10)
        assert stranger.status_code == 200 and stranger.json()["waiting_count"] == 0
        assert "browser" not in stranger.json()
        holder = shared_http.get(f"{url}/ready", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
        assert holder.json()["browser"] == "starting"


def test_a_browser_start_mode_aiod_does_not_have_is_refused() -> None:
    assert GatewaySettings.from_env({"BROWSER_START_MODE": "AUTO"}).browser_start_mode == "auto"
    with pytest.raises(ConfigError, match="BROWSER_START_MODE must be async, auto or manual, got 'later'"):
        GatewaySettings.from_env({"BROWSER_START_MODE": "later"})


def test_ready_is_public_with_a_key(tmp_path: Path) -> None:
    settings = replace(GatewaySettings.from_env({}), skills_path=tmp_path, api_key=KEY)
    with serve_app(build_app(settings)) as url:
        answer = shared_http.get(f"{url}/ready", timeout=10)
        assert answer.status_code == 200 and answer.json()["waiting_count"] == 0
        assert shared_http.get(f"{url}/v1/sandbox", timeout=10).status_code == 401


def test_with_a_key_ready_names_the_upstreams_only_to_key_holders(tmp_path: Path, late_port: int) -> None:
    """A public route must not tell a stranger what the sandbox aggregates: a count, not names."""
    settings = replace(
        GatewaySettings.from_env({}),
        skills_path=tmp_path,
        api_key=KEY,
        mcp_servers={"late": {"url": f"http://127.0.0.1:{late_port}/mcp", "prefix": "late"}},
    )
    with serve_app(build_app(settings)) as url, httpx.Client(base_url=url, timeout=10) as http:
        for headers, params in (({}, {}), ({"Authorization": "Bearer wrong"}, {}), ({}, {"api_key": KEY})):
            stranger = http.get("/ready", headers=headers, params=params)
            assert stranger.status_code == 503
            assert stranger.json()["status"] == "starting" and stranger.json()["waiting_count"] == 1
            assert "waiting" not in stranger.json() and "late" not in stranger.text
        for headers in ({"Authorization": f"Bearer {KEY}"}, {"X-API-Key": KEY}):
            holder = http.get("/ready", headers=headers)
            assert holder.status_code == 503
            assert holder.json()["waiting"] == ["late"] and holder.json()["waiting_count"] == 1


def modern_list(http: httpx.Client) -> dict[str, object]:
    params = {"_meta": MODERN_META}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
    answer = http.post("/mcp", headers=headers, json=body)
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()["result"]
    return result


def test_the_list_says_how_long_it_holds(gateway: str, late_port: int) -> None:
    with httpx.Client(base_url=gateway, timeout=10) as http:
        assert modern_list(http)["ttlMs"] == 1_000  # an upstream is still starting: ask again soon
        with upstream_process(late_port, "late", ["hello"]):
            assert modern_list(http)["ttlMs"] == 60_000


@pytest.mark.anyio
async def test_a_listening_client_hears_an_upstream_arrive_and_go(gateway: str, late_port: int) -> None:
    async with Client(f"{gateway}/mcp") as client:
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
        before = {t.name for t in (await client.list_tools()).tools}
        assert "late_hello" not in before
        async with client.listen(tools_list_changed=True) as subscription:
            events = aiter(subscription)
            with upstream_process(late_port, "late", ["hello"]):
                with anyio.fail_after(10):
                    assert isinstance(await anext(events), ToolsListChanged)
                assert "late_hello" in {t.name for t in (await client.list_tools()).tools}
            with anyio.fail_after(10):
                assert isinstance(await anext(events), ToolsListChanged)
            assert "late_hello" not in {t.name for t in (await client.list_tools()).tools}


@pytest.mark.anyio
async def test_a_handshake_era_client_is_promised_notifications_on_the_get_stream(gateway: str) -> None:
    """A 2025-era client receives them on the GET stream (tests/gateway/doors/mcp/test_list_changes.py)."""
    async with Client(f"{gateway}/mcp", mode="legacy") as client:
        tools = client.server_capabilities.tools
        assert tools is not None and tools.list_changed
