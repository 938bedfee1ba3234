"""``sandbox_execute_code`` through a real gateway's ``/mcp``: the seed's schema and step 3, failures
as ``isError`` with the traceback, timeouts, isolation, and the API key kept out of the interpreter."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
from mcp import Client

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.jsonrpc import call_tool, rpc, tool_text
from tests.support.requirements import needs_program
from tests.support.servers import serve_app

needs_node = needs_program("node", "nodejs")

SEED_ENTRY = {
    "description": "Execute code in Python or JavaScript runtime.",
    "inputSchema": {
        "properties": {
            "code": {"description": "Code to execute", "type": "string"},
            "language": {"description": "Programming language ('python', 'javascript')", "type": "string"},
            "timeout": {"description": "Execution timeout in seconds", "type": "integer"},
        },
        "required": ["code"],
        "type": "object",
    },
    "name": "sandbox_execute_code",
}

SEED_STEP_3 = {
    "language": "python",
    "code": 'nums = [int(n) for n in open("/tmp/agent-data.txt").read().split()]\n'
    'open("/tmp/agent-result.txt", "w").write(str(sum(nums)))\nprint("sum written")',
}


def test_published_entry_is_exactly_the_seeds(mcp_url: str) -> None:
    tools = rpc(mcp_url, "tools/list").json()["result"]["tools"]
    entry = next(tool for tool in tools if tool["name"] == "sandbox_execute_code")
    assert {key: entry[key] for key in SEED_ENTRY} == SEED_ENTRY
    assert json.dumps(entry["inputSchema"], sort_keys=True) == json.dumps(SEED_ENTRY["inputSchema"], sort_keys=True)


def test_seed_step_3_sums_the_file(mcp_url: str) -> None:
    data, result = Path("/tmp/agent-data.txt"), Path("/tmp/agent-result.txt")
    result.unlink(missing_ok=True)
    data.write_text("3\n7\n12\n5\n")
    try:
        answer = call_tool(mcp_url, "sandbox_execute_code", SEED_STEP_3, id=3)
        assert answer == {"content": [{"type": "text", "text": "sum written\n"}], "isError": False}
        assert result.read_text() == "27"
    finally:
        data.unlink(missing_ok=True)
        result.unlink(missing_ok=True)


def test_python_exception_is_an_error_result_with_the_traceback(mcp_url: str) -> None:
    answer = call_tool(mcp_url, "sandbox_execute_code", {"code": "print('partial')\n{}['missing']"})
    assert answer["isError"] is True
    text = tool_text(answer)
    assert text.startswith("partial\nTraceback (most recent call last):")
    assert 'File "<cell-1>", line 2' in text and text.endswith("KeyError: 'missing'")


def test_non_zero_exit_is_an_error_result(mcp_url: str) -> None:
    answer = call_tool(mcp_url, "sandbox_execute_code", {"code": "import sys\nsys.exit(2)"})
    assert answer["isError"] is True and "SystemExit: 2" in tool_text(answer)


@needs_node
def test_javascript_console_log_and_exception(mcp_url: str) -> None:
    ok = call_tool(mcp_url, "sandbox_execute_code", {"language": "javascript", "code": "console.log('hello', 1 + 1)"})
    assert ok == {"content": [{"type": "text", "text": "hello 2\n"}], "isError": False}
    failed = call_tool(mcp_url, "sandbox_execute_code", {"language": "javascript", "code": "null.boom"})
    assert failed["isError"] is True
    text = tool_text(failed)
    assert "TypeError: Cannot read properties of null (reading 'boom')" in text and "<cell-1>:1" in text


def test_bad_arguments_are_error_results(mcp_url: str) -> None:
    unknown = call_tool(mcp_url, "sandbox_execute_code", {"code": "puts 1", "language": "ruby"})
    assert unknown["isError"] is True
    assert tool_text(unknown) == "unsupported language 'ruby'; supported languages: python, javascript"
    assert tool_text(call_tool(mcp_url, "sandbox_execute_code", {"language": "python"})) == "code is required"
    typed = call_tool(mcp_url, "sandbox_execute_code", {"code": "1", "timeout": "soon"})
    assert typed["isError"] is True and "timeout" in tool_text(typed)


def test_timeout_kills_the_loop_and_the_next_call_works(mcp_url: str) -> None:
    started = time.monotonic()
    stuck = call_tool(
        mcp_url, "sandbox_execute_code", {"code": "print('spinning', flush=True)\nwhile True: pass", "timeout": 1}
    )
    assert time.monotonic() - started < 8
    assert stuck["isError"] is True
    assert tool_text(stuck) == "spinning\nTimeoutError: Execution timed out after 1 second"
    after = call_tool(mcp_url, "sandbox_execute_code", {"code": "print('next')"})
    assert after == {"content": [{"type": "text", "text": "next\n"}], "isError": False}


def test_stateless_calls_do_not_share_state(mcp_url: str) -> None:
    call_tool(mcp_url, "sandbox_execute_code", {"code": "leaked = 'yes'"})
    answer = call_tool(mcp_url, "sandbox_execute_code", {"code": "print(globals().get('leaked'))"})
    assert tool_text(answer) == "None\n"


def test_expression_value_answers_when_nothing_is_printed(mcp_url: str) -> None:
    assert tool_text(call_tool(mcp_url, "sandbox_execute_code", {"code": "6 * 7"})) == "42"


def test_api_key_never_reaches_the_interpreter(
    gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIO_API_KEY", "code-secret")
    with serve_app(build_app(replace(gateway_settings, api_key="code-secret"))) as url:
        auth = {"Authorization": "Bearer code-secret"}
        answer = call_tool(
            f"{url}/mcp",
            "sandbox_execute_code",
            {"code": "import os\nprint(os.environ.get('AIO_API_KEY'))"},
            headers=auth,
        )
        assert answer == {"content": [{"type": "text", "text": "None\n"}], "isError": False}


@pytest.mark.anyio
async def test_through_the_official_sdk(mcp_url: str) -> None:
    async with Client(mcp_url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["sandbox_execute_code"].input_schema == SEED_ENTRY["inputSchema"]
        result = await client.call_tool("sandbox_execute_code", {"code": "print('via sdk')"})
        assert not result.is_error and result.content[0].text == "via sdk\n"
        failed = await client.call_tool("sandbox_execute_code", {"code": "raise RuntimeError('sdk boom')"})
        assert failed.is_error and failed.content[0].text.endswith("RuntimeError: sdk boom")
        if shutil.which("node"):
            arguments = {"language": "javascript", "code": "console.log(40 + 2)"}
            js = await client.call_tool("sandbox_execute_code", arguments)
            assert not js.is_error and js.content[0].text == "42\n"


def test_memory_limit_is_an_error_naming_the_variable(gateway_settings: GatewaySettings) -> None:
    limited = replace(gateway_settings, code_memory_limit_mb=64)
    with serve_app(build_app(limited)) as url:
        hog = call_tool(f"{url}/mcp", "sandbox_execute_code", {"code": "block = bytearray(128 * 1024 * 1024)"})
        assert hog["isError"] is True
        assert "MemoryError" in tool_text(hog) and "64 MiB" in tool_text(hog)
        assert "AIO_CODE_MEMORY_LIMIT_MB" in tool_text(hog)
        fine = call_tool(f"{url}/mcp", "sandbox_execute_code", {"code": "print('fine')"})
        assert fine.get("isError") is not True and tool_text(fine) == "fine\n"
