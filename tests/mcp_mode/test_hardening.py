"""The standalone MCP mode as a new user meets it: the console command's ``--help``, a client that
sends no ``Accept``, strict tool schemas, and the cap on agent runs at once."""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from tests.support.servers import console_script, free_port
from tests.support.strict_schema import NotStrict, closed_objects, ensure_strict_json_schema

from .helpers import StandIn, mcp_client, mcp_post, serve_settings, sse_json, tool_text

TOOLS = ["run_prompt", "list_files", "read_file", "write_file", "delete_file"]


def run_console(name: str, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with a private loopback port, so a command that serves anyway binds nothing public."""
    port = str(free_port())
    env = {
        "AICODEBOX_MCP_MODE_HOST": "127.0.0.1",
        "AICODEBOX_MCP_MODE_PORT": port,
        "AICODEBOX_API_MODE_HOST": "127.0.0.1",
        "AICODEBOX_API_MODE_PORT": port,
        "AICODEBOX_AVAILABLE_MODELS": "m",
        "AICODEBOX_WORKSPACE": str(workspace),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run([console_script(name), *args], env=env, capture_output=True, text=True, timeout=20)


@pytest.mark.parametrize("name", ["agentbox-mcp-mode", "agentbox-api"])
def test_console_commands_print_usage_and_refuse_unknown_flags(name: str, tmp_path) -> None:
    helped = run_console(name, tmp_path, "--help")  # the unfixed command served until killed
    assert helped.returncode == 0 and helped.stdout.startswith(f"usage: {name}"), helped
    assert "AICODEBOX_" in helped.stdout
    wrong = run_console(name, tmp_path, "--port", "9")
    assert wrong.returncode == 2 and "unrecognized arguments: --port 9" in wrong.stderr


def post_without_accept(url: str, accept: str | None = None) -> tuple[int, str]:
    """A tools/list the way urllib or a hand-written client sends it: no Accept header at all (or,
    with ``accept``, only that one, a blank one included)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"Content-Type": "application/json"} | ({"Accept": accept} if accept is not None else {})
    connection.request("POST", parts.path, body=body, headers=headers)
    response = connection.getresponse()
    answer = (response.status, response.read().decode())
    connection.close()
    return answer


def test_a_missing_or_blank_accept_header_means_anything(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        for path, accept in (("/", None), ("/mcp", None), ("/mcp", ""), ("/", " ")):
            status, text = post_without_accept(base + path, accept)
            assert status == 200, (accept, text)
            data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
            assert [tool["name"] for tool in json.loads(data[0])["result"]["tools"]] == TOOLS


def _nullable(schema: object) -> list[str]:
    """Where a schema allows null (``"type": [..., "null"]``, ``{"type": "null"}`` in an anyOf)."""
    found: list[str] = []
    if isinstance(schema, dict):
        kind = schema.get("type")
        if kind == "null" or (isinstance(kind, list) and "null" in kind):
            found.append(json.dumps(schema))
        for value in schema.values():
            found.extend(_nullable(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_nullable(value))
    return found


def test_tool_input_schemas_are_strict_and_never_nullable(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        tools = sse_json(mcp_post(f"{base}/mcp"))["result"]["tools"]
    assert [tool["name"] for tool in tools] == TOOLS
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["additionalProperties"] is False, tool["name"]
        assert _nullable(schema) == [], tool["name"]
        assert all("default" not in schema["properties"][name] for name in schema.get("required", []))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_tool_schema_passes_the_agents_sdk_strict_conversion(make_settings, mode: str) -> None:
    """Issue 28: ``run_prompt``'s free-form ``json_schema`` object made the OpenAI Agents SDK fall
    back to a non-strict tool; every published input schema now converts."""
    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp", mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == TOOLS
            for tool in tools:
                strict = ensure_strict_json_schema(tool.input_schema)
                assert closed_objects(strict), tool.name
            # strict mode makes every argument required: a model fills the optional ones with their defaults
            run_prompt = tools[0].input_schema["properties"]
            every = {name: spec["default"] for name, spec in run_prompt.items() if "default" in spec}
            assert set(every) == set(run_prompt) - {"prompt"}
            outcome = await client.call_tool("run_prompt", {**every, "prompt": "ANSWER all given"})
            assert not outcome.is_error and tool_text(outcome) == "all given", tool_text(outcome)
    with pytest.raises(NotStrict, match="additionalProperties"):  # the check refuses what it should
        free = {"type": "object", "additionalProperties": True}
        ensure_strict_json_schema({"type": "object", "properties": {"s": free}})


@pytest.mark.anyio
async def test_strict_schemas_still_take_an_explicit_null(make_settings, workspace) -> None:
    (workspace / "a.txt").write_text("a")
    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp") as client:
            listed = await client.call_tool("list_files", {"path": None})
            assert not listed.is_error and '"a.txt"' in tool_text(listed)
            extra = await client.call_tool("read_file", {"path": "a.txt", "encoding": "latin-1"})
            assert extra.is_error and "encoding" in tool_text(extra)


@pytest.mark.anyio
async def test_agent_runs_are_capped_across_workspaces(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings(AICODEBOX_MAX_CONCURRENT_RUNS="1")) as base:
        url = f"{base}/mcp"
        async with mcp_client(url) as first_client, mcp_client(url) as second_client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(first_client.call_tool, "run_prompt", {"prompt": "SLEEP 1.5", "workspace": "a"})
                await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
                refused = await second_client.call_tool("run_prompt", {"prompt": "ANSWER b", "workspace": "b"})
                assert refused.is_error
                assert tool_text(refused) == (
                    "too many agent runs at once: the limit is 1 (AICODEBOX_MAX_CONCURRENT_RUNS); retry later"
                )
                assert len(stand_in.calls()) == 1
            again = await second_client.call_tool("run_prompt", {"prompt": "ANSWER b", "workspace": "b"})
            assert not again.is_error and tool_text(again) == "b"
