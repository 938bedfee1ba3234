"""The seed's four-step workflow and its two failure shapes, with the seed's exact request bodies.

Raw HTTP sends only what curl sends (``Content-Type: application/json``, curl's default Accept), no
``initialize`` and no protocol-version header; the SDK tests cover handshake-era and 2026 clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from tests.support import shared_http
from tests.support.builtin_tools import BUILTIN_TOOLS

SEED_STEPS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "sandbox_file_operations",
            "arguments": {"action": "write", "path": "/tmp/agent-data.txt", "content": "3\n7\n12\n5\n"},
        },
    },
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "wc -l /tmp/agent-data.txt", "cwd": "/tmp"}},
    },
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "sandbox_execute_code",
            "arguments": {
                "language": "python",
                "code": 'nums = [int(n) for n in open("/tmp/agent-data.txt").read()'
                '.split()]\nopen("/tmp/agent-result.txt", "w").write(str(sum(nums)))\nprint("sum written")',
            },
        },
    },
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "sandbox_file_operations", "arguments": {"action": "read", "path": "/tmp/agent-result.txt"}},
    },
]

CURL_HEADERS = {"Content-Type": "application/json", "Accept": "*/*", "User-Agent": "curl/7.88.1"}


def post_raw(mcp_url: str, body: dict) -> dict:
    response = shared_http.post(mcp_url, content=json.dumps(body), headers=CURL_HEADERS, timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers
    return response.json()


@pytest.fixture(autouse=True)
def clean_tmp_files() -> None:
    for name in ("/tmp/agent-data.txt", "/tmp/agent-result.txt"):
        Path(name).unlink(missing_ok=True)


def test_four_steps_over_raw_http(mcp_url: str) -> None:
    first = post_raw(mcp_url, SEED_STEPS[0])
    assert first == {
        "id": 1,
        "jsonrpc": "2.0",
        "result": {
            "content": [
                {
                    "text": '{"action":"write","bytes_written":9,"path":"/tmp/agent-data.txt","success":true}',
                    "type": "text",
                }
            ],
            "isError": False,
        },
    }
    assert Path("/tmp/agent-data.txt").read_text() == "3\n7\n12\n5\n"

    second = post_raw(mcp_url, SEED_STEPS[1])
    assert second["id"] == 2 and second["result"]["isError"] is False
    shell = json.loads(second["result"]["content"][0]["text"])
    assert set(shell) == {"output", "exit_code", "cwd", "status", "session_id"}
    assert shell["exit_code"] == 0 and shell["cwd"] == "/tmp"
    assert shell["output"].strip() == "4 /tmp/agent-data.txt"

    third = post_raw(mcp_url, SEED_STEPS[2])
    assert third["result"]["isError"] is False
    assert third["result"]["content"][0]["text"].strip() == "sum written"

    fourth = post_raw(mcp_url, SEED_STEPS[3])
    assert fourth["result"]["isError"] is False
    read = json.loads(fourth["result"]["content"][0]["text"])
    assert read == {"action": "read", "content": "27", "path": "/tmp/agent-result.txt", "success": True}


def test_unknown_tool_is_a_jsonrpc_error_on_200(mcp_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "sandbox_execute", "arguments": {}}}
    assert post_raw(mcp_url, body) == {
        "error": {"code": -32602, "message": "unknown tool: sandbox_execute"},
        "id": 5,
        "jsonrpc": "2.0",
    }


def test_missing_file_passes_the_structured_error_through(mcp_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 6,
        "method": "tools/call",
        "params": {
            "name": "sandbox_file_operations",
            "arguments": {"action": "read", "path": "/tmp/agent-missing.txt"},
        },
    }
    answer = post_raw(mcp_url, body)
    assert answer["id"] == 6 and answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    failure = json.loads(text)
    assert list(failure) == ["action", "error", "message", "path", "success"]  # sorted, as aiod prints
    assert failure["error"] == {
        "errno": 2,
        "errno_name": "ENOENT",
        "error_type": "not_found",
        "exception_type": "FileNotFoundError",
        "message": "Failed to read file: No such file or directory (os error 2)",
        "operation": "read",
        "path": "/tmp/agent-missing.txt",
        "retryable": False,
    }
    assert failure["message"] == failure["error"]["message"]
    assert (failure["action"], failure["path"], failure["success"]) == ("read", "/tmp/agent-missing.txt", False)
    assert text == json.dumps(failure, sort_keys=True, separators=(",", ":"))


def test_missing_cmd_is_an_error_result(mcp_url: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {}},
    }
    result = post_raw(mcp_url, body)["result"]
    assert result == {"content": [{"type": "text", "text": "cmd is required"}], "isError": True} or (
        result["isError"] is True and result["content"][0]["text"] == "cmd is required"
    )


async def _run_workflow(client: Client) -> None:
    for step in SEED_STEPS[:3]:
        result = await client.call_tool(step["params"]["name"], step["params"]["arguments"])
        assert not result.is_error, result
    final = await client.call_tool("sandbox_file_operations", SEED_STEPS[3]["params"]["arguments"])
    assert not final.is_error
    assert json.loads(final.content[0].text)["content"] == "27"
    missing = await client.call_tool("sandbox_file_operations", {"action": "read", "path": "/tmp/agent-missing.txt"})
    assert missing.is_error and json.loads(missing.content[0].text)["error"]["error_type"] == "not_found"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_four_steps_through_the_official_sdk(mcp_url: str, mode: str) -> None:
    """``legacy`` handshakes (2025-11-25); ``auto`` speaks the stateless 2026-07-28 revision."""
    async with Client(mcp_url, mode=mode) as client:
        expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
        assert client.protocol_version == expected
        tools = await client.list_tools()
        assert [t.name for t in tools.tools][: len(BUILTIN_TOOLS)] == BUILTIN_TOOLS
        assert all(t.description and t.input_schema.get("type") == "object" for t in tools.tools)
        await _run_workflow(client)
