"""``/v1/file/*`` and ``/v1/sandbox`` through the public agent-sandbox SDK (0.0.30), unmodified: every
``data`` must parse into its models, failures included; upload/download round trip with ``Range``."""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from agent_sandbox import Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.errors import UnprocessableEntityError
from agent_sandbox.types import (
    FileFindResult,
    FileGlobResult,
    FileGrepResult,
    FileListResult,
    FileReadResult,
    FileUploadResult,
    SandboxResponse,
    StrReplaceEditorResult,
)

from agentbox_gateway import __version__
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.fifos import watched_fifo
from tests.support.servers import serve_app


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_write_read_replace_search(client: Sandbox, tmp_path: Path) -> None:
    target = str(tmp_path / "data.txt")
    written = client.file.write_file(file=target, content="3\n7\n12\n5\n")
    assert written.success is True and written.data.file == target and written.data.bytes_written == 9
    read = client.file.read_file(file=target, start_line=1, end_line=3)
    assert isinstance(read.data, FileReadResult) and read.data.content == "7\n12\n"
    replaced = client.file.replace_in_file(file=target, old_str="12", new_str="13")
    assert replaced.data.replaced_count == 1
    found = client.file.search_in_file(file=target, regex=r"^1\d$")
    assert found.data.matches == ["13"] and found.data.line_numbers == [3]
    binary = bytes(range(256))
    client.file.write_file(file=target + ".bin", content=base64.b64encode(binary).decode(), encoding="base64")
    assert Path(target + ".bin").read_bytes() == binary
    client.file.write_file(file=target, content="tail", append=True, leading_newline=True)
    assert Path(target).read_text() == "3\n7\n13\n5\n\ntail"


def test_write_refuses_a_fifo_at_once(client: Sandbox, tmp_path: Path) -> None:
    client.file.write_file(file=str(tmp_path / "warm.txt"), content="x")  # the REST door is built on first use
    with watched_fifo(tmp_path / "pipe") as fifo:
        started = time.monotonic()
        response = client.file.write_file(file=str(fifo), content="x")
        assert time.monotonic() - started < 2  # a writer blocks on a FIFO until a reader opens it
    assert response.success is False and response.message == "Failed to write file: not a regular file"
    assert response.data.model_extra["error_type"] == "invalid_target"


def test_failures_parse_and_carry_the_error(client: Sandbox, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.txt")
    response = client.file.read_file(file=missing)
    assert response.success is False
    assert response.message == "Failed to read file: No such file or directory (os error 2)"
    assert response.data.file == missing
    extra = response.data.model_extra
    assert (extra["errno"], extra["errno_name"], extra["error_type"]) == (2, "ENOENT", "not_found")
    assert extra["exception_type"] == "FileNotFoundError" and extra["retryable"] is False
    directory = client.file.list_path(path=missing)
    assert directory.success is False and directory.data.model_extra["error_type"] == "not_found"
    grep = client.file.grep_files(path=str(tmp_path), pattern="(")
    assert grep.success is False and grep.data.pattern == "(" and grep.data.model_extra["error_type"] == "bad_request"
    (tmp_path / "latin.txt").write_bytes(b"\xe9t\xe9")
    decode = client.file.read_file(file=str(tmp_path / "latin.txt"))
    assert decode.success is False and decode.data.model_extra["error_type"] == "decode_error"


def test_validation_failure_is_422(client: Sandbox, gateway: str) -> None:
    response = shared_http.post(f"{gateway}/v1/file/read", json={"start_line": 1}, timeout=30)
    assert response.status_code == 422
    body = response.json()
    assert body["success"] is False and body["message"] == "Request data validation failed"
    with pytest.raises(UnprocessableEntityError):
        client.file.str_replace_editor(command="bogus", path="/tmp")


def test_find_grep_glob_list(client: Sandbox, tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("import os\nTODO = 1\n")
    (tmp_path / "pkg" / "b.txt").write_text("todo later\n")
    find = client.file.find_files(path=str(tmp_path), glob="*.py")
    assert isinstance(find.data, FileFindResult) and find.data.files == [str(tmp_path / "pkg" / "a.py")]
    grep = client.file.grep_files(path=str(tmp_path), pattern="todo", case_insensitive=True, context_before=1)
    assert isinstance(grep.data, FileGrepResult) and grep.data.match_count == 2
    first = grep.data.matches[0]
    assert (first.file, first.line_number, first.line_content, first.context_before) == (
        str(tmp_path / "pkg" / "a.py"),
        2,
        "TODO = 1",
        ["import os"],
    )
    glob = client.file.glob_files(path=str(tmp_path), pattern="**/*.txt")
    assert isinstance(glob.data, FileGlobResult) and [f.name for f in glob.data.files] == ["b.txt"]
    assert glob.data.files[0].size == 11 and glob.data.pattern == "**/*.txt"
    listed = client.file.list_path(path=str(tmp_path), recursive=True, sort_by="name")
    assert isinstance(listed.data, FileListResult)
    assert [f.name for f in listed.data.files] == ["a.py", "b.txt", "pkg", "skills"]
    assert (listed.data.directory_count, listed.data.file_count, listed.data.total_count) == (2, 2, 4)


def test_str_replace_editor(client: Sandbox, tmp_path: Path) -> None:
    target = str(tmp_path / "ed.py")
    created = client.file.str_replace_editor(command="create", path=target, file_text="x = 1\n")
    assert isinstance(created.data, StrReplaceEditorResult) and created.data.prev_exist is False
    edited = client.file.str_replace_editor(command="str_replace", path=target, old_str="x = 1", new_str="x = 2")
    assert edited.success is True and edited.data.old_content == "x = 1\n" and edited.data.new_content == "x = 2\n"
    refused = client.file.str_replace_editor(command="str_replace", path=target, old_str="nope", new_str="")
    assert refused.success is False and refused.data.error.startswith("No replacement was performed")
    assert refused.message == refused.data.error
    undone = client.file.str_replace_editor(command="undo_edit", path=target)
    assert undone.success is True and Path(target).read_text() == "x = 1\n"


@pytest.fixture
def small_uploads(gateway_settings: GatewaySettings) -> Iterator[str]:
    """A gateway whose upload limit is 1,000 bytes (``AIO_MAX_UPLOAD_BYTES``)."""
    limit = GatewaySettings.from_env({"AIO_MAX_UPLOAD_BYTES": "1000"}).max_upload_bytes
    with serve_app(build_app(replace(gateway_settings, max_upload_bytes=limit))) as url:
        yield url


def test_upload_over_the_limit_is_413_and_stores_nothing(small_uploads: str, tmp_path: Path) -> None:
    client = Sandbox(base_url=small_uploads, timeout=30)
    folder = tmp_path / "uploads"
    folder.mkdir()
    assert client.file.upload_file(file=("small.bin", b"x" * 500), path=str(folder / "small.bin")).success
    with pytest.raises(ApiError) as refused:
        client.file.upload_file(file=("big.bin", b"x" * 2000), path=str(folder / "big.bin"))
    assert refused.value.status_code == 413, refused.value.body
    assert refused.value.body["message"] == "Failed to upload file: the upload is larger than the limit of 1000 bytes"
    assert "AIO_MAX_UPLOAD_BYTES" in refused.value.body["hint"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield f'--agentbox\r\nContent-Disposition: form-data; name="path"\r\n\r\n{folder}/chunked.bin\r\n'.encode()
        yield b'--agentbox\r\nContent-Disposition: form-data; name="file"; filename="chunked.bin"\r\n\r\n'
        for _ in range(20):
            yield b"y" * 100
        yield b"\r\n--agentbox--\r\n"

    answer = shared_http.post(
        f"{small_uploads}/v1/file/upload",
        content=chunks(),
        headers={"Content-Type": "multipart/form-data; boundary=agentbox"},
        timeout=30,
    )
    assert answer.status_code == 413 and answer.json()["success"] is False
    assert sorted(p.name for p in folder.iterdir()) == ["small.bin"]


def test_upload_download_binary_with_range(client: Sandbox, gateway: str, tmp_path: Path) -> None:
    payload = os.urandom(300_000) + bytes(range(256))
    source = tmp_path / "source.bin"
    source.write_bytes(payload)
    target = tmp_path / "uploaded" / "copy.bin"
    with open(source, "rb") as handle:
        uploaded = client.file.upload_file(file=("source.bin", handle), path=str(target))
    assert isinstance(uploaded.data, FileUploadResult)
    assert (uploaded.data.file_path, uploaded.data.file_size, uploaded.data.success) == (
        str(target),
        len(payload),
        True,
    )
    assert target.read_bytes() == payload
    into_directory = client.file.upload_file(file=("named.bin", b"abc"), path=str(tmp_path))
    assert into_directory.data.file_path == str(tmp_path / "named.bin")
    new_directory = client.file.upload_file(file=("named.bin", b"abc"), path=f"{tmp_path}/fresh/")
    assert new_directory.data.file_path == f"{tmp_path}/fresh/named.bin"
    assert (tmp_path / "fresh" / "named.bin").read_bytes() == b"abc"
    nameless = client.file.upload_file(file=("..", b"abc"), path=str(tmp_path))
    assert nameless.success is False and nameless.data.success is False
    assert nameless.data.model_extra["error_type"] == "bad_request"

    assert b"".join(client.file.download_file(path=str(target))) == payload
    ranged = shared_http.get(
        f"{gateway}/v1/file/download",
        params={"path": str(target)},
        headers={"Range": "bytes=1000-1999"},
        timeout=30,
    )
    assert ranged.status_code == 206 and ranged.content == payload[1000:2000]
    assert ranged.headers["content-range"] == f"bytes 1000-1999/{len(payload)}"
    assert ranged.headers["accept-ranges"] == "bytes" and ranged.headers["etag"]
    suffix = shared_http.get(
        f"{gateway}/v1/file/download",
        params={"path": str(target)},
        headers={"Range": "bytes=-256"},
        timeout=30,
    )
    assert suffix.status_code == 206 and suffix.content == bytes(range(256))


def test_download_failures(client: Sandbox, gateway: str, tmp_path: Path) -> None:
    with pytest.raises(ApiError) as caught:
        b"".join(client.file.download_file(path=str(tmp_path / "nope.bin")))
    assert caught.value.status_code == 404 and caught.value.body["data"]["error_type"] == "not_found"
    directory = shared_http.get(f"{gateway}/v1/file/download", params={"path": str(tmp_path)}, timeout=30)
    assert directory.status_code == 400 and directory.json()["data"]["errno_name"] == "EISDIR"


def test_downloads_close_the_files_they_send(gateway: str, tmp_path: Path) -> None:
    """A download streams the file it opened and checked; that file is closed once it is sent, and
    when the caller leaves half-way (the gateway runs in this process)."""
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(256 * 1024))

    def open_here() -> int:
        return sum(os.path.realpath(f"/proc/self/fd/{fd}") == str(path) for fd in os.listdir("/proc/self/fd"))

    url = f"{gateway}/v1/file/download"
    whole = path.read_bytes()
    assert shared_http.get(url, params={"path": str(path)}).content == whole
    ranged = shared_http.get(url, params={"path": str(path)}, headers={"Range": "bytes=0-99"})
    assert ranged.status_code == 206 and ranged.content == whole[:100]
    for _ in range(3):
        with shared_http.stream("GET", url, params={"path": str(path)}) as answer:
            next(answer.iter_raw(1024))
    deadline = time.monotonic() + 5
    while open_here() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_here() == 0


def test_sandbox_context(client: Sandbox, gateway: str) -> None:
    context = client.sandbox.get_context()
    assert isinstance(context, SandboxResponse)
    assert context.version == __version__ and context.home_dir == os.path.expanduser("~")
    assert context.detail.system.home_dir == context.home_dir and context.detail.system.user
    port = gateway.rsplit(":", 1)[1]
    assert port in context.detail.system.occupied_ports
    assert context.success is True and context.data.startswith("agentbox sandbox ")
    packages = client.sandbox.get_python_packages()
    assert packages.success is True and packages.data
    assert all({"name", "version"} <= set(p) for p in packages.data)


def test_ping_and_capabilities(gateway: str) -> None:
    assert shared_http.get(f"{gateway}/v1/ping", timeout=30).json()["success"] is True
    report = shared_http.get(f"{gateway}/v1/capabilities", params={"refresh": "true"}, timeout=30).json()
    assert report["success"] is True
    data = report["data"]
    assert data["files"]["read"] is True and "available" in data["exec"]
    assert data["browser"]["status"] in ("ready", "absent")
    assert set(data) >= {"files", "exec", "code_interpreter", "browser"}
