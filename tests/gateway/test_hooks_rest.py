"""``/v1/sandbox/hooks`` through the agent-sandbox SDK (sync and async), and the hooks really running
when the gateway stops: by priority (equal ones together), each cut at its timeout, registered by
the API or by ``SANDBOX_SHUTDOWN_HOOKS``. Bad input is a 4xx envelope and registers nothing."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response_list_sandbox_hook import ResponseListSandboxHook

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app


def test_register_list_remove(gateway: str) -> None:
    client = Sandbox(base_url=gateway, timeout=30)
    added = client.sandbox.register_hook(name="flush", command="sync", timeout=5, priority=2)
    assert added.data.name == "flush" and added.data.event == "shutdown" and added.data.source == "api"
    client.sandbox.register_hook(name="first", command="true", priority=1)
    listed = client.sandbox.list_hooks()
    assert isinstance(listed, ResponseListSandboxHook)
    assert [h.name for h in listed.data] == ["first", "flush"]
    assert client.sandbox.list_hooks(event="shutdown").data == listed.data
    assert client.sandbox.remove_hook(name="first").data["name"] == "first"
    assert [h.name for h in client.sandbox.list_hooks().data] == ["flush"]
    with pytest.raises(ApiError) as missing:
        client.sandbox.remove_hook(name="first")
    assert missing.value.status_code == 404


def test_the_async_client_too(gateway: str) -> None:
    async def scenario() -> list[str]:
        client = AsyncSandbox(base_url=gateway, timeout=30)
        await client.sandbox.register_hook(name="async-hook", command="true")
        return [h.name for h in (await client.sandbox.list_hooks()).data]

    assert asyncio.run(scenario()) == ["async-hook"]


def test_hooks_run_at_shutdown_by_priority_with_timeouts(gateway_settings: GatewaySettings, tmp_path: Path) -> None:
    log = tmp_path / "log"
    env_hooks = json.dumps([{"name": "from-env", "command": f"echo env >> {log}", "priority": 3}])
    settings = replace(gateway_settings, shutdown_hooks=env_hooks)
    with serve_app(build_app(settings)) as url:
        client = Sandbox(base_url=url, timeout=30)
        assert [(h.name, h.source) for h in client.sandbox.list_hooks().data] == [("from-env", "env")]
        client.sandbox.register_hook(name="late", command=f"echo late >> {log}", priority=2)
        client.sandbox.register_hook(name="hangs", command="sleep 30", timeout=0.5, priority=1)
        client.sandbox.register_hook(name="early", command=f"echo early >> {log}", priority=0)
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 10  # the hanging hook was cut at its timeout
    assert log.read_text().split() == ["early", "late", "env"]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "x"}, 422),
        ({"name": "x", "command": "true", "timeout": 0}, 422),
        ({"name": "x", "command": "true", "event": "startup"}, 400),
        ({"name": "bad name!", "command": "true"}, 400),
        ({"name": "x", "command": "   "}, 400),
    ],
)
def test_bad_registrations_change_nothing(module_gateway: str, body: dict, status: int) -> None:
    """One gateway for every case, so nothing a refused registration left would go unseen."""
    response = httpx.post(f"{module_gateway}/v1/sandbox/hooks", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    assert httpx.get(f"{module_gateway}/v1/sandbox/hooks", timeout=30).json()["data"] == []
