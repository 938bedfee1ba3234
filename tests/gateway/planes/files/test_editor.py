"""The str_replace editor: Anthropic's semantics (unique match, insert, view_range, undo) on the
plane, and the same object through MCP and REST."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from agentbox_gateway.doors.shared.file_fields import editor_object
from agentbox_gateway.planes.files import EditorPlane, FilePlane
from agentbox_gateway.settings import GatewaySettings
from tests.support.jsonrpc import call_tool, tool_json

pytestmark = pytest.mark.anyio


@pytest.fixture
def editor() -> EditorPlane:
    return EditorPlane(FilePlane(GatewaySettings.from_env({})))


async def test_create_refuses_to_overwrite_and_needs_text(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "new" / "file.py"
    created = await editor.run("create", str(target), file_text="print(1)\n")
    assert editor_object(created) == {
        "command": "create",
        "path": str(target),
        "output": f"File created successfully at: {target}",
        "prev_exist": False,
        "error": None,
        "old_content": None,
        "new_content": "print(1)\n",
        "success": True,
    }
    assert target.read_text() == "print(1)\n"
    again = await editor.run("create", str(target), file_text="other")
    assert again.error == f"File already exists at: {target}. Cannot overwrite files using command `create`."
    assert again.prev_exist is True and target.read_text() == "print(1)\n"
    missing = await editor.run("create", str(tmp_path / "x.py"))
    assert missing.error == "Parameter `file_text` is required for command: create"


async def test_view_file_cat_n_layout_and_range(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "lines.txt"
    target.write_text("one\ntwo\n\tthree\nfour\n")
    whole = await editor.run("view", str(target))
    assert whole.output == (
        f"Here's the result of running `cat -n` on {target}:\n     1\tone\n     2\ttwo\n     3\t\tthree\n     4\tfour\n"
    )
    part = await editor.run("view", str(target), view_range=[2, 3])
    assert part.output.endswith("     2\ttwo\n     3\t\tthree\n")
    tail = await editor.run("view", str(target), view_range=[3, -1])
    assert tail.output.endswith("     3\t\tthree\n     4\tfour\n")
    bad = await editor.run("view", str(target), view_range=[0, 2])
    assert bad.error.startswith("Invalid `view_range`: [0, 2]. Its first element `0` should be within")
    beyond = await editor.run("view", str(target), view_range=[1, 9])
    assert "should be smaller than the number of lines in the file: `4`" in beyond.error
    backwards = await editor.run("view", str(target), view_range=[3, 2])
    assert "should be larger or equal than its first `3`" in backwards.error


async def test_view_directory_two_levels_without_hidden(editor: EditorPlane, tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "too-deep.txt").write_text("x")
    (tmp_path / "a" / "one.txt").write_text("x")
    (tmp_path / ".git").mkdir()
    result = await editor.run("view", str(tmp_path))
    assert result.output == (
        f"Here's the files and directories up to 2 levels deep in {tmp_path}, excluding hidden items:\n"
        f"{tmp_path}\n{tmp_path}/a/\n{tmp_path}/a/b/\n{tmp_path}/a/one.txt\n"
    )
    refused = await editor.run("view", str(tmp_path), view_range=[1, 2])
    assert refused.error == "The `view_range` parameter is not allowed when `path` points to a directory."
    not_for_dirs = await editor.run("str_replace", str(tmp_path), old_str="a", new_str="b")
    assert "is a directory and only the `view` command can be used on directories" in not_for_dirs.error


async def test_str_replace_requires_a_unique_match(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "code.py"
    target.write_text("x = 1\ny = 2\nx = 1\n")
    duplicate = await editor.run("str_replace", str(target), old_str="x = 1", new_str="x = 9")
    assert duplicate.error == (
        "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [1, 3]. "
        "Please ensure it is unique (or set `replace_mode` to ALL, FIRST or LAST)"
    )
    absent = await editor.run("str_replace", str(target), old_str="z = 3", new_str="")
    assert absent.error == f"No replacement was performed, old_str `z = 3` did not appear verbatim in {target}."
    assert target.read_text() == "x = 1\ny = 2\nx = 1\n"
    unique = await editor.run("str_replace", str(target), old_str="y = 2\n", new_str="y = 20\nw = 0\n")
    assert unique.success and target.read_text() == "x = 1\ny = 20\nw = 0\nx = 1\n"
    assert unique.old_content == "x = 1\ny = 2\nx = 1\n" and unique.new_content == target.read_text()
    assert unique.output.startswith(f"The file {target} has been edited. Here's the result of running `cat -n` on")
    assert "     2\ty = 20\n     3\tw = 0\n" in unique.output


async def test_replace_modes(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "m.txt"
    target.write_text("a-a-a")
    assert (await editor.run("str_replace", str(target), old_str="a", new_str="L", replace_mode="LAST")).success
    assert target.read_text() == "a-a-L"
    assert (await editor.run("str_replace", str(target), old_str="a", new_str="F", replace_mode="FIRST")).success
    assert target.read_text() == "F-a-L"
    await editor.run("str_replace", str(target), old_str="-", new_str="+", replace_mode="ALL")
    assert target.read_text() == "F+a+L"


async def test_insert_after_line_and_at_top(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "i.txt"
    target.write_text("one\ntwo\n")
    assert (await editor.run("insert", str(target), insert_line=1, new_str="one and a half")).success
    assert target.read_text() == "one\none and a half\ntwo\n"
    await editor.run("insert", str(target), insert_line=0, new_str="zero\n")
    assert target.read_text() == "zero\none\none and a half\ntwo\n"
    await editor.run("insert", str(target), insert_line=4, new_str="end")
    assert target.read_text() == "zero\none\none and a half\ntwo\nend\n"
    bad = await editor.run("insert", str(target), insert_line=9, new_str="x")
    assert bad.error == "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 5]"
    assert (await editor.run("insert", str(target), new_str="x")).error == (
        "Parameter `insert_line` is required for command: insert"
    )


async def test_undo_edit_walks_back_history(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "u.txt"
    assert (await editor.run("undo_edit", str(tmp_path / "nothing.txt"))).error.startswith("The path")
    await editor.run("create", str(target), file_text="v1\n")
    await editor.run("str_replace", str(target), old_str="v1", new_str="v2")
    await editor.run("insert", str(target), insert_line=1, new_str="v3")
    assert target.read_text() == "v2\nv3\n"
    undone = await editor.run("undo_edit", str(target))
    assert (
        undone.output == f"Last edit to {target} undone successfully. "
        f"Here's the result of running `cat -n` on {target}:\n     1\tv2\n"
    )
    assert target.read_text() == "v2\n"
    await editor.run("undo_edit", str(target))
    assert target.read_text() == "v1\n"
    await editor.run("undo_edit", str(target))  # undoing the create removes the file
    assert not target.exists()
    target.write_text("someone else's file\n")
    assert (await editor.run("undo_edit", str(target))).error == f"No edit history found for {target}."


async def test_relative_and_missing_paths(editor: EditorPlane, tmp_path: Path) -> None:
    relative = await editor.run("view", "work/file.py")
    assert relative.error == (
        "The path work/file.py is not an absolute path, it should start with `/`. Maybe you meant /work/file.py?"
    )
    missing = await editor.run("view", str(tmp_path / "nope.txt"))
    assert missing.error == f"The path {tmp_path / 'nope.txt'} does not exist. Please provide a valid path."
    unknown = await editor.run("delete", str(tmp_path))
    assert unknown.error.startswith("Unrecognized command delete.")


async def test_non_utf8_file_is_reported(editor: EditorPlane, tmp_path: Path) -> None:
    target = tmp_path / "bin.dat"
    target.write_bytes(b"\xff\xfe\x00")
    result = await editor.run("view", str(target))
    assert not result.success and "did not contain valid UTF-8" in result.error


def test_editor_over_mcp(mcp_url: str, tmp_path: Path) -> None:
    target = tmp_path / "mcp.txt"
    created = call_tool(
        mcp_url,
        "sandbox_str_replace_editor",
        {"command": "create", "path": str(target), "file_text": "alpha\nbeta\n"},
    )
    assert created["isError"] is False and tool_json(created)["success"] is True
    refused = call_tool(
        mcp_url,
        "sandbox_str_replace_editor",
        {"command": "str_replace", "path": str(target), "old_str": "gamma", "new_str": "x"},
    )
    assert refused["isError"] is True
    assert tool_json(refused)["error"].startswith("No replacement was performed, old_str `gamma`")
    viewed = call_tool(
        mcp_url, "sandbox_str_replace_editor", {"command": "view", "path": str(target), "view_range": [2, -1]}
    )
    assert tool_json(viewed)["output"].endswith("     2\tbeta\n")
    missing = call_tool(mcp_url, "sandbox_str_replace_editor", {"path": str(target)})
    assert missing["isError"] is True and missing["content"][0]["text"] == "command is required"


async def test_edits_never_write_into_a_fifo_swapped_in(editor: EditorPlane, tmp_path: Path) -> None:
    """The file is replaced by a FIFO (with a reader, so an open to write would not wait) over and
    over while edits run: a write must check what it opened, not what it looked at before."""
    target = tmp_path / "swap.txt"
    stop = threading.Event()
    readers: list[int] = []

    def swap() -> None:
        for n in range(100_000):
            if stop.is_set():
                return
            regular = tmp_path / f"regular-{n}"
            regular.write_text("alpha\n")
            os.replace(regular, target)
            fifo = tmp_path / f"fifo-{n}"
            os.mkfifo(fifo)
            readers.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            os.replace(fifo, target)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            await editor.run("str_replace", str(target), old_str="alpha", new_str="beta")
            await editor.run("insert", str(target), insert_line=0, new_str="gamma")
    finally:
        stop.set()
        swapper.join(5)
    sent = 0
    for reader in readers:
        sent += len(os.read(reader, 4096))
        os.close(reader)
    assert sent == 0, f"{sent} bytes were written into FIFOs"
