"""The file tools against hostile workspaces: FIFOs, a directory swapped for a symlink while the
tools run, huge files and symlink deletion (through the official MCP SDK client)."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from .helpers import mcp_client, serve_settings, tool_text

pytestmark = pytest.mark.anyio

#: Calls per tool in the race test: on the unfixed server 14-87 of 500 escaped (here: the first).
RACE_ATTEMPTS = 300


@pytest.fixture
def served(make_settings):
    with serve_settings(make_settings()) as base:
        yield f"{base}/mcp"


async def test_a_fifo_is_refused_without_blocking(served: str, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    async with mcp_client(served) as client:
        with anyio.fail_after(10):
            for _ in range(3):  # more calls than would be stuck in blocked worker threads
                read = await client.call_tool("read_file", {"path": "pipe"})
                assert read.is_error and tool_text(read) == "not a regular file: pipe"
                written = await client.call_tool("write_file", {"path": "pipe", "content": "x"})
                assert written.is_error and tool_text(written) == "not a regular file: pipe"
            listed = await client.call_tool("list_files", {})
            assert not listed.is_error


async def test_read_file_is_capped_at_16_mib_and_sent_once(served: str, workspace: Path) -> None:
    (workspace / "huge.bin").write_bytes(b"")
    os.truncate(workspace / "huge.bin", 16 * 1024 * 1024 + 1)  # sparse: costs no disk
    (workspace / "note.txt").write_text("small")
    async with mcp_client(served) as client:
        huge = await client.call_tool("read_file", {"path": "huge.bin"})
        assert huge.is_error
        assert tool_text(huge) == "huge.bin is 16777217 bytes, larger than the 16 MiB read limit"
        small = await client.call_tool("read_file", {"path": "note.txt"})
    assert not small.is_error and tool_text(small) == "small"
    assert small.structured_content is None  # the text travels once, not also as structured content


async def test_delete_file_removes_a_symlink_not_its_target(served: str, workspace: Path) -> None:
    (workspace / "target.txt").write_text("keep me")
    (workspace / "link").symlink_to("target.txt")
    (workspace / "dangling").symlink_to("nowhere.txt")
    async with mcp_client(served) as client:
        for name in ("link", "dangling"):
            deleted = await client.call_tool("delete_file", {"path": name})
            assert not deleted.is_error, tool_text(deleted)
    assert not (workspace / "link").is_symlink() and not (workspace / "dangling").is_symlink()
    assert (workspace / "target.txt").read_text() == "keep me"


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(first: Path, second: Path) -> None:
    """Swap two names atomically (``renameat2(RENAME_EXCHANGE)``): neither is ever missing."""
    if _libc.renameat2(_AT_FDCWD, bytes(first), _AT_FDCWD, bytes(second), _RENAME_EXCHANGE) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


@pytest.fixture
def swapping(workspace: Path, tmp_path: Path) -> Iterator[Path]:
    """``workspace/sub`` flipping between a real directory and a symlink to ``outside`` in a thread
    (both hold ``file.txt`` and ``victim.txt``, only ``outside`` has ``only-outside``); yields
    ``outside``."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text("SECRET")
    (outside / "victim.txt").write_text("outside victim")
    (outside / "only-outside").write_text("")
    sub, spare = workspace / "sub", workspace / "spare"
    sub.mkdir()
    (sub / "file.txt").write_text("inside")
    spare.symlink_to(outside)
    stop = threading.Event()
    flips = [0]

    def flip() -> None:
        while not stop.is_set():
            if not (sub.is_symlink() or (sub / "victim.txt").exists()):
                (sub / "victim.txt").write_text("inside victim")
            exchange(sub, spare)
            flips[0] += 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield outside
        assert thread.is_alive() and flips[0] > RACE_ATTEMPTS  # the swapping really went on
    finally:
        stop.set()
        thread.join(10)


async def test_swapping_a_directory_for_a_symlink_never_escapes(served: str, swapping: Path) -> None:
    outside = swapping
    async with mcp_client(served) as client:
        with anyio.fail_after(120):
            for attempt in range(RACE_ATTEMPTS):
                read = await client.call_tool("read_file", {"path": "sub/file.txt"})
                assert "SECRET" not in tool_text(read), attempt
                await client.call_tool("write_file", {"path": f"sub/new-{attempt}.txt", "content": "pwned"})
                await client.call_tool("delete_file", {"path": "sub/victim.txt"})
                listed = await client.call_tool("list_files", {"path": "sub"})
                assert "only-outside" not in tool_text(listed), attempt
    assert sorted(p.name for p in outside.iterdir()) == ["file.txt", "only-outside", "victim.txt"]
    assert (outside / "victim.txt").read_text() == "outside victim"
    assert (outside / "file.txt").read_text() == "SECRET"
