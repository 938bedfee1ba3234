"""The four file tools through the official MCP SDK client: shapes, confinement, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .helpers import mcp_client, serve_settings, tool_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def served(make_settings):
    with serve_settings(make_settings(AICODEBOX_MCP_MODE_TOKEN="file-token")) as base:
        yield f"{base}/mcp"


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under ``root`` with its content (or link target), to prove nothing changed."""
    state: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            state[key] = f"-> {os.readlink(path)}"
        elif path.is_file():
            state[key] = path.read_bytes()
        else:
            state[key] = "dir"
    return state


async def test_write_read_list_delete(served: str, workspace: Path) -> None:
    async with mcp_client(served, token="file-token") as client:
        content = "héllo wörld ✓\nline 2\r\n"
        written = await client.call_tool("write_file", {"path": "/docs/deep/note.txt", "content": content})
        assert not written.is_error
        assert json.loads(tool_text(written)) == {
            "status": "ok",
            "path": "/docs/deep/note.txt",
            "size": len(content),
        }
        assert len(content) != len(content.encode())  # size counts characters, not bytes
        assert (workspace / "docs/deep/note.txt").read_bytes() == content.encode()
        assert written.structured_content["result"] == tool_text(written)

        read = await client.call_tool("read_file", {"path": "docs/deep/note.txt"})
        assert not read.is_error and tool_text(read) == content

        overwritten = await client.call_tool("write_file", {"path": "docs/deep/note.txt", "content": "short"})
        assert json.loads(tool_text(overwritten))["size"] == 5
        assert (workspace / "docs/deep/note.txt").read_text() == "short"

        (workspace / "b.txt").write_text("b")
        listing = json.loads(tool_text(await client.call_tool("list_files", {})))
        assert listing == {
            "path": "/",
            "entries": [{"name": "b.txt", "type": "file"}, {"name": "docs", "type": "dir"}],
        }
        sub = json.loads(tool_text(await client.call_tool("list_files", {"path": "docs/deep"})))
        assert sub == {"path": "docs/deep", "entries": [{"name": "note.txt", "type": "file"}]}

        deleted = await client.call_tool("delete_file", {"path": "docs/deep/note.txt"})
        assert json.loads(tool_text(deleted)) == {"status": "ok", "path": "docs/deep/note.txt"}
        assert not (workspace / "docs/deep/note.txt").exists()


async def test_undecodable_bytes_are_replaced(served: str, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes(b"caf\xe9 \xff\xfe ok")
    async with mcp_client(served, token="file-token") as client:
        read = await client.call_tool("read_file", {"path": "latin1.txt"})
    assert not read.is_error
    assert tool_text(read) == "caf\ufffd \ufffd\ufffd ok"


async def test_errors_are_error_results(served: str, workspace: Path) -> None:
    (workspace / "dir").mkdir()
    (workspace / "file.txt").write_text("x")
    before = snapshot(workspace)
    async with mcp_client(served, token="file-token") as client:
        cases = [
            ("read_file", {"path": "missing.txt"}, "not found: missing.txt"),
            ("read_file", {"path": "dir"}, "is a directory: dir"),
            ("list_files", {"path": "missing"}, "not found: missing"),
            ("list_files", {"path": "file.txt"}, "not a directory: file.txt"),
            ("delete_file", {"path": "dir"}, "cannot delete directories: dir"),
            ("delete_file", {"path": "/"}, "cannot delete directories: /"),
            ("delete_file", {"path": "missing.txt"}, "not found: missing.txt"),
            ("write_file", {"path": "dir", "content": "x"}, "is a directory: dir"),
            (
                "write_file",
                {"path": "file.txt/child", "content": "x"},
                "a parent of file.txt/child is a file",
            ),
            ("read_file", {}, "path is required"),
            ("write_file", {"path": "a.txt"}, "content is required"),
            ("write_file", {"path": "a.txt", "content": 5}, "content must be of type string"),
            ("list_files", {"colour": "red"}, "unexpected argument colour (accepted: path)"),  # as every server says
        ]
        for tool, args, message in cases:
            outcome = await client.call_tool(tool, args)
            assert outcome.is_error, (tool, args)
            assert tool_text(outcome) == message, (tool, args)
    assert snapshot(workspace) == before


async def test_every_escape_is_refused_and_touches_nothing(served: str, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (workspace / "link-out").symlink_to(outside)
    (workspace / "file-link").symlink_to(outside / "secret.txt")
    (workspace / "inside").mkdir()
    before_inside, before_outside = snapshot(workspace), snapshot(outside)
    escapes = [
        "../outside/secret.txt",
        "inside/../../outside/secret.txt",
        "link-out/secret.txt",
        "file-link",
        "link-out/new.txt",
        "/../outside/secret.txt",
        "link-out",
        "..",
        "inside/../..",
    ]
    async with mcp_client(served, token="file-token") as client:
        for path in escapes:
            for tool, args in (
                ("read_file", {"path": path}),
                ("list_files", {"path": path}),
                ("write_file", {"path": path, "content": "pwned"}),
                ("delete_file", {"path": path}),
            ):
                outcome = await client.call_tool(tool, args)
                assert outcome.is_error, (tool, path)
                assert tool_text(outcome) == f"path escapes workspace root: {path!r}", (tool, path)
    assert snapshot(workspace) == before_inside
    assert snapshot(outside) == before_outside


async def test_symlink_inside_the_workspace_is_fine(served: str, workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "real" / "a.txt").write_text("inside")
    (workspace / "alias").symlink_to(workspace / "real")
    async with mcp_client(served, token="file-token") as client:
        read = await client.call_tool("read_file", {"path": "alias/a.txt"})
    assert not read.is_error and tool_text(read) == "inside"
