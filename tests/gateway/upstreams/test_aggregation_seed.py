"""The seed's aggregation run, verbatim, with a real ``aiod start`` process aggregating another
gateway as ``peer`` and a ``gone`` upstream that never answers. Plus what the process says about
skipped entries, and an upstream behind its own API key (gateways built in-process there)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.jsonrpc import call_tool, list_tool_names, rpc
from tests.support.servers import console_script, free_port, run_command, serve_app

BASH_ARGS = {"cmd": "echo hello", "cwd": "/tmp"}


def aiod(port: int, env: dict[str, str] | None = None) -> Any:
    environment = {"EXTRA_MCP_SERVERS": "", "AIO_API_KEY": "", "LOG_FORMAT": "", **(env or {})}
    return run_command(
        [console_script("aiod"), "start", "--port", str(port)],
        env=environment,
        ready_url=f"http://127.0.0.1:{port}/health",
    )


def output_of(process: subprocess.Popen) -> str:
    """Everything the (stopped) process printed."""
    assert process.stdout is not None
    return process.stdout.read().decode(errors="replace")


def gateway_app(tmp: Path, **overrides: Any) -> Starlette:
    skills = tmp / "skills"
    skills.mkdir(parents=True, exist_ok=True)
    return build_app(replace(GatewaySettings.from_env({}), skills_path=skills, **overrides))


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The first daemon of the seed's run."""
    with serve_app(gateway_app(tmp_path_factory.mktemp("peer"))) as url:
        yield f"{url}/mcp"


def without_session(result: dict[str, Any]) -> dict[str, Any]:
    """The result with the shell's session id taken out of its JSON text."""
    payload = json.loads(result["content"][0]["text"])
    payload.pop("session_id", None)
    return {**result, "content": [{**result["content"][0], "text": payload}, *result["content"][1:]]}


def test_the_seed_run(peer: str) -> None:
    gone = f"http://127.0.0.1:{free_port()}/mcp"
    servers = {"peer": {"url": peer, "prefix": "peer"}, "gone": {"url": gone, "prefix": "gone"}}
    port = free_port()
    with aiod(port, {"EXTRA_MCP_SERVERS": json.dumps(servers)}):
        mcp = f"http://127.0.0.1:{port}/mcp"
        builtins = list_tool_names(peer)
        assert len(builtins) == 12
        names = list_tool_names(mcp)
        assert len(names) == 24
        assert names == builtins + [f"peer_{name}" for name in builtins]
        assert names[12] == "peer_sandbox_execute_bash" and names[-1] == "peer_computer_execute_actions"

        peer_tools = rpc(peer, "tools/list").json()["result"]["tools"]
        published = rpc(mcp, "tools/list").json()["result"]["tools"][12:]
        assert published == [{**t, "name": f"peer_{t['name']}"} for t in peer_tools]

        through = call_tool(mcp, "peer_sandbox_execute_bash", BASH_ARGS, id=2)
        direct = call_tool(peer, "sandbox_execute_bash", BASH_ARGS, id=2)
        assert through.keys() == direct.keys()
        assert without_session(through) == without_session(direct)
        assert json.loads(through["content"][0]["text"])["output"].strip() == "hello"

        gone_result = call_tool(mcp, "gone_hello", {}, id=3)
        assert gone_result["isError"] is True
        assert gone_result["content"][0]["text"] == "upstream gone unavailable: connection refused"


def test_skipped_entries_are_announced_once_at_start(peer: str) -> None:
    servers = {
        "peer": {"url": peer, "prefix": "peer"},
        "remote": {"url": "http://mcp.example.com/mcp", "prefix": "r"},
        "tls": {"url": "https://127.0.0.1:8443/mcp", "prefix": "t"},
        "stdio": {"command": "npx", "args": ["@playwright/mcp"]},
        "malformed": {"prefix": "m"},
    }
    port = free_port()
    with aiod(port, {"EXTRA_MCP_SERVERS": json.dumps(servers)}) as process:
        assert len(list_tool_names(f"http://127.0.0.1:{port}/mcp")) == 24
    lines = [line for line in output_of(process).splitlines() if "skipped" in line]
    expected = {
        "remote": "remote host 'mcp.example.com' is not allowed",
        "tls": "https upstreams are not supported",
        "stdio": '"command" (stdio) servers are not supported',
        "malformed": '"url" is missing',
    }
    assert len(lines) == len(expected), lines
    for name, reason in expected.items():
        assert sum(f"'{name}'" in line and reason in line for line in lines) == 1, (name, lines)


def test_an_upstream_behind_its_own_key_gets_only_the_entrys_header(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "shared-key-for-both"
    auth = {"Authorization": f"Bearer {key}"}
    with serve_app(gateway_app(tmp_path / "p", api_key=key)) as keyed_peer:
        servers = {
            "keyed": {"url": f"{keyed_peer}/mcp", "prefix": "keyed", "headers": auth},
            "nokey": {"url": f"{keyed_peer}/mcp", "prefix": "nokey"},
        }
        with serve_app(gateway_app(tmp_path / "g", api_key=key, mcp_servers=servers)) as url:
            mcp = f"{url}/mcp"
            names = list_tool_names(mcp, headers=auth)
            # The client's own (valid) bearer is never passed on, so the entry without headers gets a 401.
            assert len(names) == 24 and not any(name.startswith("nokey_") for name in names)
            assert names[12] == "keyed_sandbox_execute_bash"
            ok = call_tool(mcp, "keyed_sandbox_execute_bash", BASH_ARGS, headers=auth)
            assert ok["isError"] is False
            refused = call_tool(mcp, "nokey_sandbox_execute_bash", BASH_ARGS, headers=auth)
            assert refused["isError"] is True
            assert refused["content"][0]["text"].startswith("upstream nokey unavailable: HTTP 401")
    assert key not in caplog.text
