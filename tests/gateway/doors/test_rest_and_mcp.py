"""One implementation, two doors: the seed's workflow over REST with the public ``agent-sandbox`` SDK,
the same operations over REST and MCP giving the same answers, and the generated OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_sandbox import Sandbox

from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json, tool_text

SUM_CODE = (
    'nums = [int(n) for n in open("{data}").read().split()]\n'
    'open("{result}", "w").write(str(sum(nums)))\nprint("sum written")'
)


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_the_seed_workflow_over_rest(client: Sandbox, tmp_path: Path) -> None:
    data, result = tmp_path / "agent-data.txt", tmp_path / "agent-result.txt"
    written = client.file.write_file(file=str(data), content="3\n7\n12\n5\n")
    assert written.success and written.data.bytes_written == 9

    counted = client.shell.exec_command(command=f"wc -l {data}", exec_dir=str(tmp_path))
    assert counted.success and counted.data.exit_code == 0
    assert counted.data.output.strip() == f"4 {data}"

    summed = client.code.execute_code(language="python", code=SUM_CODE.format(data=data, result=result))
    assert summed.success and summed.data.stdout == "sum written\n"

    read = client.file.read_file(file=str(result))
    assert read.success and read.data.content == "27"


def test_file_reads_and_listings_agree(client: Sandbox, mcp_url: str, tmp_path: Path) -> None:
    tmp_path = tmp_path / "tree"
    tmp_path.mkdir()
    for name, text in {"a.txt": "alpha\nneedle one\n", "b.py": "needle = 2\n", "c.md": "none\n"}.items():
        (tmp_path / name).write_text(text)
    rest_read = client.file.read_file(file=str(tmp_path / "a.txt"), start_line=1)
    mcp_read = tool_json(
        call_tool(
            mcp_url, "sandbox_file_operations", {"action": "read", "path": str(tmp_path / "a.txt"), "start_line": 1}
        )
    )
    assert rest_read.data.content == mcp_read["content"] == "needle one\n"

    rest_list = client.file.list_path(path=str(tmp_path))
    mcp_list = tool_json(call_tool(mcp_url, "sandbox_file_operations", {"action": "list", "path": str(tmp_path)}))
    assert sorted(f.name for f in rest_list.data.files) == sorted(f["name"] for f in mcp_list["files"])
    assert rest_list.data.total_count == mcp_list["total_count"] == 3

    rest_grep = client.file.grep_files(path=str(tmp_path), pattern="needle")
    mcp_grep = tool_json(
        call_tool(mcp_url, "sandbox_file_operations", {"action": "grep", "path": str(tmp_path), "pattern": "needle"})
    )
    rest_hits = sorted((m.file, m.line_number, m.line_content) for m in rest_grep.data.matches)
    mcp_hits = sorted((m["file"], m["line_number"], m["line_content"]) for m in mcp_grep["matches"])
    assert rest_hits == mcp_hits and len(rest_hits) == 2


def test_missing_files_fail_alike(client: Sandbox, mcp_url: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.txt")
    rest = client.file.read_file(file=missing)
    mcp = call_tool(mcp_url, "sandbox_file_operations", {"action": "read", "path": missing})
    assert rest.success is False and mcp["isError"] is True
    mcp_error = json.loads(tool_text(mcp))["error"]
    rest_data = rest.data.model_dump() if hasattr(rest.data, "model_dump") else dict(rest.data)
    for field in ("errno", "errno_name", "error_type", "exception_type", "retryable"):
        assert (rest_data.get(field) or (rest.data.model_extra or {}).get(field)) == mcp_error[field], field


def test_shell_code_and_editor_agree(client: Sandbox, mcp_url: str, tmp_path: Path) -> None:
    command = "printf 'x%.0s' 1 2 3; echo; sh -c 'exit 3'"
    rest_shell = client.shell.exec_command(command=command, exec_dir=str(tmp_path))
    mcp_shell = tool_json(call_tool(mcp_url, "sandbox_execute_bash", {"cmd": command, "cwd": str(tmp_path)}))
    assert rest_shell.data.exit_code == mcp_shell["exit_code"] == 3
    assert rest_shell.data.output.strip() == mcp_shell["output"].strip() == "xxx"

    code = "import sys\nprint(sys.version_info[0] * 7)"
    rest_code = client.code.execute_code(language="python", code=code)
    mcp_code = call_tool(mcp_url, "sandbox_execute_code", {"code": code})
    assert rest_code.data.stdout == tool_text(mcp_code) == "21\n"

    target = tmp_path / "edit.txt"
    target.write_text("one\ntwo\nthree\n")
    rest_view = client.file.str_replace_editor(command="view", path=str(target), view_range=[2, 3])
    mcp_view = call_tool(
        mcp_url, "sandbox_str_replace_editor", {"command": "view", "path": str(target), "view_range": [2, 3]}
    )
    assert rest_view.data.output == tool_json(mcp_view)["output"]
    assert "two" in rest_view.data.output and "one" not in rest_view.data.output


def test_context_agrees(client: Sandbox, mcp_url: str) -> None:
    rest = client.sandbox.get_context()
    mcp = tool_json(call_tool(mcp_url, "sandbox_get_context"))
    assert rest.home_dir == mcp["home_dir"] and rest.version == mcp["version"]


def test_openapi_document_and_docs_are_generated(gateway: str) -> None:
    document = shared_http.get(f"{gateway}/v1/openapi.json").json()
    paths = document["paths"]
    for route in (
        "/v1/shell/exec",
        "/v1/bash/exec",
        "/v1/file/read",
        "/v1/file/upload",
        "/v1/code/execute",
        "/v1/jupyter/execute",
        "/v1/nodejs/execute",
        "/v1/browser/info",
        "/v1/sandbox",
    ):
        assert route in paths, route
    shell_body = paths["/v1/shell/exec"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "$ref" in shell_body or "properties" in shell_body
    docs = shared_http.get(f"{gateway}/v1/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
