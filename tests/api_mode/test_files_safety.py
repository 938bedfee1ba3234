"""``/files`` and API mode's ``/mcp/`` against hostile workspaces: FIFOs, a directory swapped for a
symlink during requests, files changing under a download, symlink deletion, the upload cap and a
full disk."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.mcp_mode.helpers import mcp_post, sse_json
from tests.mcp_mode.test_file_safety import swapping  # noqa: F401 - fixture reused

from .helpers import serve_api

#: Rounds of the race test (seven requests each, one connection per MCP call).
RACE_ROUNDS = 100


def call_tool(url: str, name: str, arguments: dict) -> dict:
    return sse_json(mcp_post(url, "tools/call", {"name": name, "arguments": arguments}))["result"]


def test_a_fifo_is_refused_without_blocking(make_api_settings, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1")) as base:
        for _ in range(3):
            got = httpx.get(f"{base}/files/pipe", timeout=5)
            assert (got.status_code, got.json()) == (400, {"detail": "not a regular file: pipe"})
            put = httpx.put(f"{base}/files/pipe", content=b"x", timeout=5)
            assert (put.status_code, put.json()) == (400, {"detail": "not a regular file: pipe"})
            for tool, arguments in (("read_file", {"path": "pipe"}), ("write_file", {"path": "pipe", "content": "x"})):
                answer = call_tool(f"{base}/mcp/", tool, arguments)
                assert answer["isError"] and answer["content"][0]["text"] == "not a regular file: pipe"
    assert (workspace / "pipe").exists() and sorted(p.name for p in workspace.iterdir()) == ["pipe"]


def test_delete_removes_a_symlink_not_its_target(api: str, workspace: Path) -> None:
    (workspace / "target.txt").write_text("keep me")
    (workspace / "link").symlink_to("target.txt")
    deleted = httpx.delete(f"{api}/files/link")
    assert deleted.status_code == 200, deleted.text
    assert not (workspace / "link").is_symlink() and (workspace / "target.txt").read_text() == "keep me"


def test_swapping_a_directory_for_a_symlink_never_escapes(
    make_api_settings,
    swapping: Path,  # noqa: F811 - the fixture imported above
) -> None:
    outside = swapping
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1")) as base, httpx.Client(timeout=10) as http:
        for attempt in range(RACE_ROUNDS):
            got = http.get(f"{base}/files/sub/file.txt")
            assert got.status_code in (200, 400, 404) and b"SECRET" not in got.content, attempt
            listed = http.get(f"{base}/files/sub")
            assert "only-outside" not in listed.text, attempt
            http.put(f"{base}/files/sub/new-{attempt}.txt", content=b"pwned")
            http.delete(f"{base}/files/sub/victim.txt")
            read = call_tool(f"{base}/mcp/", "read_file", {"path": "sub/file.txt"})
            assert "SECRET" not in read["content"][0]["text"], attempt
            call_tool(f"{base}/mcp/", "write_file", {"path": f"sub/mcp-{attempt}.txt", "content": "pwned"})
    assert sorted(p.name for p in outside.iterdir()) == ["file.txt", "only-outside", "victim.txt"]
    assert (outside / "victim.txt").read_text() == "outside victim"


def test_a_file_changing_or_vanishing_during_downloads_is_never_a_500(api: str, workspace: Path) -> None:
    target = workspace / "churn.bin"
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            target.write_bytes(os.urandom(64 * 1024) * 40)  # 2.5 MiB: the streamed path
            target.write_bytes(b"tiny")
            target.unlink()

    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    statuses: set[int] = set()
    try:
        with httpx.Client(timeout=10) as http:
            for _ in range(300):
                response = http.get(f"{api}/files/churn.bin")  # a reset would raise here
                statuses.add(response.status_code)
                if response.status_code == 200 and "content-length" in response.headers:
                    assert len(response.content) == int(response.headers["content-length"])
    finally:
        stop.set()
        thread.join(10)
    assert statuses <= {200, 404, 409}, statuses


def test_uploads_are_capped(make_api_settings, workspace: Path) -> None:
    (workspace / "kept.txt").write_text("old")
    with serve_api(make_api_settings(AICODEBOX_MAX_UPLOAD_BYTES="1000")) as base:
        declared = httpx.put(f"{base}/files/kept.txt", content=b"x" * 1001)
        assert declared.status_code == 413
        assert declared.json() == {"detail": "upload larger than AICODEBOX_MAX_UPLOAD_BYTES (1000 bytes)"}

        def chunked():
            for _ in range(4):
                yield b"y" * 400
                time.sleep(0.05)

        streamed = httpx.put(f"{base}/files/new.txt", content=chunked())
        assert streamed.status_code == 413
        assert httpx.put(f"{base}/files/ok.txt", content=b"z" * 1000).status_code == 200
    assert sorted(p.name for p in workspace.iterdir()) == ["kept.txt", "ok.txt"]  # no partial upload left
    assert (workspace / "kept.txt").read_text() == "old"


def test_a_failed_rename_leaves_no_partial_upload(api: str, workspace: Path) -> None:
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("old")

    def body_then_swap():
        yield b"new content"
        time.sleep(0.3)  # the server has begun the upload
        os.unlink(workspace / "d" / "f.txt")
        os.mkdir(workspace / "d" / "f.txt")  # the target became a directory during the upload
        yield b", the end"

    answer = httpx.put(f"{api}/files/d/f.txt", content=body_then_swap())
    assert answer.status_code == 400 and answer.json() == {"detail": "is a directory: d/f.txt"}
    assert sorted(p.name for p in (workspace / "d").iterdir()) == ["f.txt"]


@pytest.fixture
def full_disk(workspace: Path) -> Iterator[Path]:
    """The workspace on a 64 KiB tmpfs (skipped where mounting is not allowed)."""
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(workspace)], capture_output=True, timeout=10
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield workspace
    finally:
        subprocess.run(["umount", str(workspace)], timeout=10, check=True)


def test_a_full_disk_is_507_and_leaves_nothing(make_api_settings, full_disk: Path) -> None:
    with serve_api(make_api_settings()) as base:
        answer = httpx.put(f"{base}/files/big.bin", content=b"x" * 256 * 1024)
    assert answer.status_code == 507
    assert answer.json() == {"detail": "cannot write big.bin: No space left on device"}
    assert list(full_disk.iterdir()) == []
