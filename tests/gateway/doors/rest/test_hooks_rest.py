"""``/v1/sandbox/hooks`` through the agent-sandbox SDK (sync and async), and the hooks really running
when the gateway stops: by priority (equal ones together), each cut at its timeout, registered by
the API or by ``SANDBOX_SHUTDOWN_HOOKS``. Bad input is a 4xx envelope and registers nothing."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response_list_sandbox_hook import ResponseListSandboxHook

from agentbox_gateway.app import build_app
from agentbox_gateway.planes.hooks import MAX_COMMAND_BYTES, Hook, hooks_from_env
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
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
        ({"name": "x", "command": "true " * 40_000}, 422),  # 200 KiB: more than one argument may be (E2BIG)
        ({"name": "x", "command": "\u00e9" * (MAX_COMMAND_BYTES // 2 + 1)}, 400),  # few characters, many bytes
        ({"name": "x", "command": "true\u0000"}, 400),
        ({"name": "x", "command": "true \ud800"}, 422),
    ],
)
def test_bad_registrations_change_nothing(module_gateway: str, body: dict, status: int) -> None:
    """One gateway for every case, so nothing a refused registration left would go unseen."""
    sent = json.dumps(body)  # ASCII: a lone surrogate goes as the escape JSON allows
    headers = {"Content-Type": "application/json"}
    response = shared_http.post(f"{module_gateway}/v1/sandbox/hooks", content=sent, headers=headers, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    assert shared_http.get(f"{module_gateway}/v1/sandbox/hooks", timeout=30).json()["data"] == []


def test_a_hook_that_cannot_start_stops_neither_the_others_nor_the_shutdown(
    gateway_settings: GatewaySettings, tmp_path: Path
) -> None:
    """Registration refuses the commands the kernel would (see above); one that fails to start anyway (no
    fork, no bash) is logged, the later hooks still run and every plane is closed (its shells killed)."""
    log = tmp_path / "log"
    app = build_app(gateway_settings)
    with serve_app(app) as url:
        client = Sandbox(base_url=url, timeout=30)
        client.sandbox.register_hook(name="early", command=f"echo early >> {log}", priority=0)
        client.sandbox.register_hook(name="late", command=f"echo late >> {log}", priority=2)
        # past the registration's checks, as a hook that cannot start: execve refuses it with E2BIG
        hooks = app.state.planes.hooks
        hooks._hooks["unstartable"] = Hook("unstartable", "true " * 40_000, priority=1)
        shell = shared_http.post(f"{url}/v1/shell/exec", json={"command": "echo $$"}, timeout=30).json()
        shell_pid = int(shell["data"]["output"])
    assert log.read_text().split() == ["early", "late"]
    deadline = time.monotonic() + 10
    while Path(f"/proc/{shell_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{shell_pid}").exists(), "the shell plane was not closed"


def test_env_hooks_the_kernel_would_refuse_are_skipped() -> None:
    entries = [
        {"name": "huge", "command": "true " * 40_000},
        {"name": "nul", "command": "true\u0000"},
        {"name": "surrogate", "command": "true \ud800"},
        {"name": "fine", "command": "true"},
    ]
    assert [hook.name for hook in hooks_from_env(json.dumps(entries))] == ["fine"]
