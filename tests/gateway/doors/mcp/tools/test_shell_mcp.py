"""``sandbox_execute_bash`` through a real gateway: the official MCP SDK client and raw JSON-RPC."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.planes.shell.test_shell_plane import eventually, live_processes
from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_text
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio
RESULT_KEYS = ["cwd", "exit_code", "output", "session_id", "status"]


async def bash(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("sandbox_execute_bash", arguments)
    assert not result.is_error, result
    text = result.content[0].text
    payload = json.loads(text)
    assert list(payload) == RESULT_KEYS
    assert text == json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return payload


async def test_the_tool_is_published_first_with_its_schema(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        tool = (await client.list_tools()).tools[0]
    assert tool.name == "sandbox_execute_bash"
    assert tool.description.startswith("Execute a shell command. Sessions are managed automatically.")
    assert tool.input_schema["required"] == ["cmd"]
    assert {name: spec["type"] for name, spec in tool.input_schema["properties"].items()} == {
        "cmd": "string",
        "cwd": "string",
        "new_session": "boolean",
        "timeout": "integer",
        "session_id": "string",
        "detach": "boolean",  # agentbox's own (issue 28, item 12)
    }


def test_seed_step_two_over_raw_json_rpc(mcp_url: str) -> None:
    Path("/tmp/agent-data.txt").write_text("3\n7\n12\n5\n")
    result = call_tool(mcp_url, "sandbox_execute_bash", {"cmd": "wc -l /tmp/agent-data.txt", "cwd": "/tmp"})
    assert result["isError"] is False
    assert tool_text(result) == (
        '{"cwd":"/tmp","exit_code":0,"output":"4 /tmp/agent-data.txt\\n","session_id":"default","status":"completed"}'
    )


async def test_shared_session_keeps_state_and_new_session_does_not(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        first = await bash(client, cmd="cd /usr/share && export AGENTBOX_X=42 && hi() { echo hi $1; }")
        assert first["cwd"] == "/usr/share"
        shared = await bash(client, cmd="pwd; echo $AGENTBOX_X; hi there")
        assert shared["output"] == "/usr/share\n42\nhi there\n" and shared["session_id"] == "default"
        fresh = await bash(client, cmd="echo [$AGENTBOX_X]; type hi >/dev/null 2>&1 || echo none", new_session=True)
        assert fresh["output"] == "[]\nnone\n" and fresh["session_id"] != "default"
        await bash(client, cmd="export ONLY_HERE=1", session_id=fresh["session_id"])
        targeted = await bash(client, cmd="echo $ONLY_HERE", session_id=fresh["session_id"])
        assert targeted["output"] == "1\n" and targeted["session_id"] == fresh["session_id"]
        assert (await bash(client, cmd="echo [$ONLY_HERE]"))["output"] == "[]\n"


async def test_timeout_kills_the_command_and_its_children(mcp_url: str) -> None:
    token = f"{random.randint(100_000, 999_999)}"
    async with Client(mcp_url) as client:
        await bash(client, cmd="export SURVIVES=yes")
        started = time.monotonic()
        killed = await bash(client, cmd=f"sh -c 'sleep {token} & sleep {token}'; echo after", timeout=1)
        assert time.monotonic() - started < 10
        assert killed["status"] == "hard_timeout" and killed["exit_code"] == 137
        assert "after" not in killed["output"]
        assert await eventually(lambda: not live_processes(f"sleep {token}"), 1)
        again = await bash(client, cmd="echo $SURVIVES")
        assert again["output"] == "yes\n" and again["status"] == "completed"


async def test_non_zero_exit_is_a_normal_result(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        failed = await bash(client, cmd="ls /definitely-missing-dir")
    assert failed["exit_code"] == 2 and failed["status"] == "completed"
    assert "No such file or directory" in failed["output"]


async def test_long_output_is_cut_in_the_middle(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        result = await bash(client, cmd="seq 1 100000")
    output = result["output"]
    assert output.startswith("1\n2\n3\n") and output.endswith("99999\n100000\n")
    assert "characters truncated" in output and 30_000 < len(output) < 30_100


async def test_stdin_is_closed_and_background_children_do_not_block(mcp_url: str) -> None:
    token = f"{random.randint(100_000, 999_999)}"
    async with Client(mcp_url) as client:
        started = time.monotonic()
        result = await bash(client, cmd=f"cat; sleep {token} & printf started")
        assert result["output"] == "started" and time.monotonic() - started < 5


async def test_parallel_calls_share_the_session_one_after_another(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        results = await asyncio.gather(*(bash(client, cmd=f"echo {i}; sleep 0.1; echo {i}") for i in range(5)))
    assert sorted(r["output"] for r in results) == [f"{i}\n{i}\n" for i in range(5)]
    assert {r["session_id"] for r in results} == {"default"}


async def test_bad_arguments_are_tool_errors(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        missing = await client.call_tool("sandbox_execute_bash", {})
        unknown = await client.call_tool("sandbox_execute_bash", {"cmd": "true", "session_id": "no-such-session"})
        bad_dir = await client.call_tool("sandbox_execute_bash", {"cmd": "true", "cwd": "/no/such/dir"})
        bad_timeout = await client.call_tool("sandbox_execute_bash", {"cmd": "true", "timeout": 0})
        wrong_type = await client.call_tool("sandbox_execute_bash", {"cmd": "true", "timeout": "soon"})
    assert missing.is_error and missing.content[0].text == "cmd is required"
    assert unknown.is_error and unknown.content[0].text == "unknown shell session: no-such-session"
    assert bad_dir.is_error and bad_dir.content[0].text == "directory does not exist: /no/such/dir"
    assert bad_timeout.is_error and "timeout must be a positive" in bad_timeout.content[0].text
    assert wrong_type.is_error and "timeout must be of type integer" in wrong_type.content[0].text


@pytest.fixture
def keyed_gateway(gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A gateway whose own environment holds its API key, as ``aiod start`` with AIO_API_KEY has."""
    monkeypatch.setenv("AIO_API_KEY", "mcp-secret-4711")
    with serve_app(build_app(replace(gateway_settings, api_key="mcp-secret-4711"))) as url:
        yield url


def test_the_api_key_never_reaches_commands(keyed_gateway: str) -> None:
    url = f"{keyed_gateway}/mcp"
    assert shared_http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    auth = {"Authorization": "Bearer mcp-secret-4711"}
    result = call_tool(
        url, "sandbox_execute_bash", {"cmd": 'echo "[$AIO_API_KEY]"; env | grep -c mcp-secret'}, headers=auth
    )
    assert json.loads(tool_text(result))["output"] == "[]\n0\n"
