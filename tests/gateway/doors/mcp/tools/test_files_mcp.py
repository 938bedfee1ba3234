"""``sandbox_file_operations`` through a real gateway's ``/mcp``: the seed's step 4 and its failure
shape byte for byte (step 1, the write, is test_seed_workflow's), every action, argument checks, and
one file system shared with REST."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from tests.support import shared_http
from tests.support.fifos import watched_fifo
from tests.support.jsonrpc import call_tool, rpc, tool_json, tool_text

SEED_DATA = "/tmp/agent-data.txt"
SEED_RESULT = "/tmp/agent-result.txt"
SEED_MISSING = "/tmp/agent-missing.txt"


@pytest.fixture
def seed_files() -> Iterator[None]:
    paths = [Path(SEED_DATA), Path(SEED_RESULT), Path(SEED_MISSING)]
    for path in paths:
        path.unlink(missing_ok=True)
    yield
    for path in paths:
        path.unlink(missing_ok=True)


def test_seed_step_4_read_result(mcp_url: str, seed_files: None) -> None:
    Path(SEED_RESULT).write_text("27")  # what step 3's Python leaves behind
    result = call_tool(mcp_url, "sandbox_file_operations", {"action": "read", "path": SEED_RESULT}, id=4)
    assert result == {
        "content": [
            {
                "text": '{"action":"read","content":"27","path":"/tmp/agent-result.txt","success":true}',
                "type": "text",
            }
        ],
        "isError": False,
    }


def test_seed_missing_file_failure_is_byte_exact(mcp_url: str, seed_files: None) -> None:
    response = rpc(
        mcp_url,
        "tools/call",
        {"name": "sandbox_file_operations", "arguments": {"action": "read", "path": SEED_MISSING}},
        id=6,
    )
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert tool_text(result) == (
        '{"action":"read","error":{"errno":2,"errno_name":"ENOENT","error_type":"not_found",'
        '"exception_type":"FileNotFoundError","message":"Failed to read file: No such file or directory '
        '(os error 2)","operation":"read","path":"/tmp/agent-missing.txt","retryable":false},'
        '"message":"Failed to read file: No such file or directory (os error 2)",'
        '"path":"/tmp/agent-missing.txt","success":false}'
    )


def test_tool_schema(mcp_url: str) -> None:
    tools = {t["name"]: t for t in rpc(mcp_url, "tools/list").json()["result"]["tools"]}
    names = list(tools)
    assert names.index("sandbox_file_operations") + 1 == names.index("sandbox_str_replace_editor")
    tool = tools["sandbox_file_operations"]
    assert tool["description"].startswith("Unified file system operations tool for agents.")
    schema = tool["inputSchema"]
    assert schema["required"] == ["action", "path"]
    assert schema["properties"]["action"]["enum"] == [
        "read",
        "write",
        "replace",
        "search",
        "find",
        "list",
        "grep",
        "glob",
    ]
    for name in (
        "content",
        "target",
        "pattern",
        "encoding",
        "start_line",
        "end_line",
        "append",
        "recursive",
        "show_hidden",
        "file_types",
        "include",
        "exclude",
        "case_insensitive",
        "fixed_strings",
        "context_before",
        "context_after",
        "max_results",
        "include_metadata",
        "files_only",
    ):
        assert name in schema["properties"], name
    editor = tools["sandbox_str_replace_editor"]["inputSchema"]
    assert editor["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert", "undo_edit"]


def test_argument_errors(mcp_url: str, tmp_path: Path) -> None:
    missing_action = call_tool(mcp_url, "sandbox_file_operations", {"path": str(tmp_path)})
    assert missing_action["isError"] is True and tool_text(missing_action) == "action is required"
    bad_action = call_tool(mcp_url, "sandbox_file_operations", {"action": "delete", "path": str(tmp_path)})
    assert bad_action["isError"] is True and tool_text(bad_action).startswith("action must be one of")
    no_content = call_tool(mcp_url, "sandbox_file_operations", {"action": "write", "path": str(tmp_path / "x")})
    failure = tool_json(no_content)
    assert no_content["isError"] is True and failure["error"]["error_type"] == "bad_request"
    assert failure["message"] == "Failed to write file: content is required for write"
    assert not (tmp_path / "x").exists()


def test_directory_and_decode_failures(mcp_url: str, tmp_path: Path) -> None:
    directory = tool_json(call_tool(mcp_url, "sandbox_file_operations", {"action": "read", "path": str(tmp_path)}))
    assert directory["success"] is False and directory["error"]["errno_name"] == "EISDIR"
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe")
    decode = call_tool(mcp_url, "sandbox_file_operations", {"action": "read", "path": str(tmp_path / "bad.txt")})
    assert decode["isError"] is True and tool_json(decode)["error"]["error_type"] == "decode_error"
    raw = call_tool(
        mcp_url,
        "sandbox_file_operations",
        {"action": "read", "path": str(tmp_path / "bad.txt"), "encoding": "base64"},
    )
    assert tool_json(raw)["content"] == base64.b64encode(b"\xff\xfe").decode()


def test_write_and_replace_refuse_a_fifo_at_once(mcp_url: str, tmp_path: Path) -> None:
    with watched_fifo(tmp_path / "pipe") as fifo:
        for arguments in ({"action": "write", "content": "x"}, {"action": "replace", "content": "a", "target": "b"}):
            started = time.monotonic()
            result = call_tool(mcp_url, "sandbox_file_operations", {**arguments, "path": str(fifo)})
            assert time.monotonic() - started < 2
            assert result["isError"] is True and tool_json(result)["error"]["error_type"] == "invalid_target"


def test_all_eight_actions(mcp_url: str, tmp_path: Path) -> None:
    def op(**arguments: object) -> dict:
        result = call_tool(mcp_url, "sandbox_file_operations", arguments)
        assert result["isError"] is False, result
        payload = tool_json(result)
        assert payload["success"] is True and payload["action"] == arguments["action"]
        return payload

    src = tmp_path / "src"
    assert op(action="write", path=str(src / "app.py"), content="def main():\n    return 1\n")["bytes_written"] == 25
    op(action="write", path=str(src / "app.py"), content="# end\n", append=True)
    op(action="write", path=str(src / "notes.md"), content="TODO: ship\n")
    assert op(action="read", path=str(src / "app.py"), start_line=1, end_line=2)["content"] == "    return 1\n"
    assert op(action="replace", path=str(src / "app.py"), content="return 1", target="return 2")["replaced_count"] == 1
    found = op(action="search", path=str(src / "app.py"), content=r"return \d")
    assert found["line_numbers"] == [2] and found["matches"] == ["    return 2"]
    assert op(action="find", path=str(tmp_path), pattern="*.md")["files"] == [str(src / "notes.md")]
    listed = op(action="list", path=str(src), recursive=True)
    assert [f["name"] for f in listed["files"]] == ["app.py", "notes.md"] and listed["file_count"] == 2
    grep = op(action="grep", path=str(tmp_path), pattern="todo", case_insensitive=True, include=["*.md"])
    assert [(m["file"], m["line_number"]) for m in grep["matches"]] == [(str(src / "notes.md"), 1)]
    globbed = op(action="glob", path=str(tmp_path), pattern="**/*.py")
    assert [f["path"] for f in globbed["files"]] == [str(src / "app.py")] and globbed["total_count"] == 1


def test_one_file_system_for_mcp_and_rest(gateway: str, tmp_path: Path) -> None:
    target = tmp_path / "shared.txt"
    call_tool(f"{gateway}/mcp", "sandbox_file_operations", {"action": "write", "path": str(target), "content": "hi"})
    response = shared_http.post(f"{gateway}/v1/file/read", json={"file": str(target)}, timeout=30)
    assert response.json()["data"] == {"content": "hi", "file": str(target)}


@pytest.mark.anyio
async def test_official_sdk_client(mcp_url: str, tmp_path: Path) -> None:
    """The official MCP client sees the same JSON text and isError flag."""
    target = tmp_path / "sdk.txt"
    async with Client(mcp_url) as client:
        written = await client.call_tool(
            "sandbox_file_operations", {"action": "write", "path": str(target), "content": "abc"}
        )
        assert written.is_error is False
        assert json.loads(written.content[0].text) == {
            "action": "write",
            "bytes_written": 3,
            "path": str(target),
            "success": True,
        }
        failed = await client.call_tool("sandbox_file_operations", {"action": "read", "path": str(target) + ".no"})
        assert failed.is_error is True and json.loads(failed.content[0].text)["error"]["error_type"] == "not_found"
