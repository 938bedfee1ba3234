"""``/files``: listing, streamed download, raw upload and delete, confined to the workspace like the
MCP file tools (escapes by ``..`` and by symlink are refused and touch nothing)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import httpx
import pytest


def test_round_trip(api: str, workspace: Path) -> None:
    data = b"line one\n\xff\xfe binary tail\n"
    put = httpx.put(f"{api}/files/notes/a.txt", content=data)
    assert put.status_code == 200
    assert put.json() == {"status": "ok", "path": "notes/a.txt", "size": len(data)}
    assert (workspace / "notes" / "a.txt").read_bytes() == data

    assert httpx.get(f"{api}/files").json() == {"path": "/", "entries": [{"name": "notes", "type": "dir"}]}
    assert httpx.get(f"{api}/files/notes").json() == {
        "path": "notes",
        "entries": [{"name": "a.txt", "type": "file", "size": len(data)}],
    }
    got = httpx.get(f"{api}/files/notes/a.txt")
    assert got.status_code == 200 and got.content == data
    assert httpx.get(f"{api}/files//notes/a.txt").content == data  # a leading slash is the root

    assert httpx.put(f"{api}/files/notes/a.txt", content=b"short").json()["size"] == 5
    assert httpx.get(f"{api}/files/notes/a.txt").content == b"short"

    deleted = httpx.delete(f"{api}/files/notes/a.txt")
    assert deleted.json() == {"status": "ok", "path": "notes/a.txt"}
    missing = httpx.get(f"{api}/files/notes/a.txt")
    assert missing.status_code == 404 and missing.json() == {"detail": "not found: notes/a.txt"}
    assert httpx.delete(f"{api}/files/notes/a.txt").status_code == 404


def test_big_file_is_streamed_both_ways(api: str, workspace: Path) -> None:
    data = os.urandom(6 * 1024 * 1024)

    def chunks():
        for start in range(0, len(data), 256 * 1024):
            yield data[start : start + 256 * 1024]

    assert httpx.put(f"{api}/files/big.bin", content=chunks(), timeout=30).json()["size"] == len(data)
    with httpx.stream("GET", f"{api}/files/big.bin", timeout=30) as response:
        # streamed up to the size at opening, so no length is promised that a change could break
        assert response.headers["transfer-encoding"] == "chunked"
        received = b"".join(response.iter_bytes())
    assert received == data
    small = httpx.put(f"{api}/files/small.bin", content=data[:1000])
    assert small.status_code == 200
    assert httpx.get(f"{api}/files/small.bin").headers["content-length"] == "1000"


def test_directories_are_refused(api: str, workspace: Path) -> None:
    (workspace / "dir").mkdir()
    (workspace / "file.txt").write_text("x")
    refused = httpx.delete(f"{api}/files/dir")
    assert refused.status_code == 400 and refused.json()["detail"].startswith("cannot delete directories")
    assert httpx.delete(f"{api}/files").status_code == 405
    assert httpx.put(f"{api}/files/dir", content=b"x").status_code == 400
    under_a_file = httpx.put(f"{api}/files/file.txt/child", content=b"x")
    assert under_a_file.status_code == 400
    assert (workspace / "dir").is_dir() and (workspace / "file.txt").read_text() == "x"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
@pytest.mark.parametrize("path", ["%2e%2e/outside/secret.txt", "..%2Foutside%2Fsecret.txt", "link/secret.txt"])
def test_escapes_are_refused_and_touch_nothing(api: str, workspace: Path, method: str, path: str) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "link").symlink_to(outside)
    response = httpx.request(method, f"{api}/files/{path}", content=b"overwritten" if method == "PUT" else None)
    assert response.status_code == 400, response.text
    assert response.json()["detail"].startswith("path escapes workspace root")
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlinked_directory_listing_is_refused(api: str, workspace: Path) -> None:
    (workspace / "up").symlink_to(workspace.parent)
    response = httpx.get(f"{api}/files/up")
    assert response.status_code == 400 and "path escapes workspace root" in response.json()["detail"]


def test_interrupted_upload_changes_nothing(api: str, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("old")
    script.chmod(0o755)

    def body():
        yield b"new data, "
        time.sleep(0.2)
        raise RuntimeError("the client gave up")

    with pytest.raises(RuntimeError):
        httpx.put(f"{api}/files/run.sh", content=body())
    deadline = time.monotonic() + 5
    while len(list(workspace.iterdir())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p.name for p in workspace.iterdir()] == ["run.sh"]  # no partial upload left behind
    assert script.read_text() == "old"
    assert httpx.put(f"{api}/files/run.sh", content=b"fresh").json()["size"] == 5
    assert script.read_text() == "fresh" and stat.S_IMODE(script.stat().st_mode) == 0o755
