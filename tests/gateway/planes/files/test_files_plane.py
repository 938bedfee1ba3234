"""The file plane on its own: the eight actions, their limits and the structured error shape.

The plane returns typed records; these tests read them as the doors write them out (the MCP tool's
objects, REST's upload data), which is the shape clients parse."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentbox_common.errors import ErrorKind, PlaneError
from agentbox_gateway.doors.mcp.tools.files import action_object, failure_object
from agentbox_gateway.doors.rest.files import upload_data
from agentbox_gateway.doors.shared.file_fields import error_fields
from agentbox_gateway.planes.files import (
    READ_LIMIT,
    FileOperationError,
    FilePlane,
    FileRead,
    FileWritten,
    GlobQuery,
    GrepQuery,
    ListQuery,
    SavedUpload,
)
from agentbox_gateway.planes.files.operations import INLINE_READ_LIMIT
from agentbox_gateway.planes.files.tree import GREP_MAX_MATCHES, glob_to_regex, read_up_to
from agentbox_gateway.settings import GatewaySettings
from tests.support.fifos import watched_fifo

pytestmark = pytest.mark.anyio


class WrittenOut:
    """A :class:`FilePlane` whose action results come back as the MCP tool's objects (an upload as
    REST's data); every other call is the plane's own."""

    def __init__(self, plane: FilePlane) -> None:
        self.plane = plane

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.plane, name)
        if name in ("download_target", "read_text", "write_text"):
            return method

        async def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            result = await method(*args, **kwargs)
            return upload_data(result) if isinstance(result, SavedUpload) else action_object(name, result)

        return call


@pytest.fixture
def files() -> WrittenOut:
    return WrittenOut(FilePlane(GatewaySettings.from_env({})))


async def failure_of(call) -> FileOperationError:
    with pytest.raises(FileOperationError) as caught:
        await call
    return caught.value


async def test_write_then_read(files: WrittenOut, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "data.txt"
    written = await files.write(str(target), "3\n7\n12\n5\n")
    assert written == {"action": "write", "path": str(target), "success": True, "bytes_written": 9}
    read = await files.read(str(target))
    assert read == {"action": "read", "path": str(target), "success": True, "content": "3\n7\n12\n5\n"}
    assert (await files.read(str(target), start_line=1, end_line=3))["content"] == "7\n12\n"
    assert (await files.read(str(target), start_line=3))["content"] == "5\n"
    assert (await files.read(str(target), end_line=1))["content"] == "3\n"


async def test_append_and_base64(files: WrittenOut, tmp_path: Path) -> None:
    target = tmp_path / "blob.bin"
    payload = bytes(range(256))
    await files.write(str(target), base64.b64encode(payload[:100]).decode(), encoding="base64")
    result = await files.write(str(target), base64.b64encode(payload[100:]).decode(), encoding="base64", append=True)
    assert result["bytes_written"] == 156
    assert target.read_bytes() == payload
    assert base64.b64decode((await files.read(str(target), encoding="base64"))["content"]) == payload


async def test_missing_file_has_aiod_error_shape(files: WrittenOut, tmp_path: Path) -> None:
    missing = str(tmp_path / "agent-missing.txt")
    error = await failure_of(files.read(missing))
    message = "Failed to read file: No such file or directory (os error 2)"
    assert failure_object(error, "read") == {
        "action": "read",
        "error": {
            "errno": 2,
            "errno_name": "ENOENT",
            "error_type": "not_found",
            "exception_type": "FileNotFoundError",
            "message": message,
            "operation": "read",
            "path": missing,
            "retryable": False,
        },
        "message": message,
        "path": missing,
        "success": False,
    }


async def test_directory_read_as_file(files: WrittenOut, tmp_path: Path) -> None:
    error = await failure_of(files.read(str(tmp_path)))
    assert (error.errno, error.errno_name, error.error_type) == (21, "EISDIR", "invalid_target")
    assert error.exception_type == "IsADirectoryError"
    assert error.message == "Failed to read file: Is a directory (os error 21)"


async def test_path_below_a_file_and_relative_path(files: WrittenOut, tmp_path: Path) -> None:
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    error = await failure_of(files.read(str(a_file / "x")))
    assert (error.errno_name, error.error_type, error.exception_type) == (
        "ENOTDIR",
        "invalid_path",
        "NotADirectoryError",
    )
    error = await failure_of(files.write("relative/name.txt", "x"))
    assert error.error_type == "invalid_path" and error.operation == "write"
    assert not Path("relative").exists()  # noqa: ASYNC240


async def test_invalid_utf8_is_a_decode_error(files: WrittenOut, tmp_path: Path) -> None:
    target = tmp_path / "latin.txt"
    target.write_bytes(b"caf\xe9\n")
    error = await failure_of(files.read(str(target)))
    assert error.error_type == "decode_error" and error.exception_type == "UnicodeDecodeError"
    assert error.message.startswith("Failed to read file: stream did not contain valid UTF-8")
    assert (await files.read(str(target), encoding="raw"))["content"] == "caf\ufffd\n"
    assert (await files.read(str(target), encoding="base64"))["content"] == base64.b64encode(b"caf\xe9\n").decode()


async def test_fifo_is_refused_not_waited_on(files: WrittenOut, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # a plain open() would wait for a writer forever
    with anyio.fail_after(5):
        error = await failure_of(files.read(str(fifo)))
    assert error.error_type == "invalid_target"
    with anyio.fail_after(5):
        assert (await files.grep(str(tmp_path), GrepQuery("x")))["files_searched"] == 0


async def test_writes_refuse_fifos_and_devices_without_waiting(files: WrittenOut, tmp_path: Path) -> None:
    with watched_fifo(tmp_path / "pipe") as fifo:
        for call in (
            files.write(str(fifo), "x"),
            files.write(str(fifo), "x", append=True),
            files.write_text(str(fifo), "x"),
        ):
            started = time.monotonic()
            error = await failure_of(call)
            assert error.error_type == "invalid_target" and error.message.endswith("not a regular file")
            assert time.monotonic() - started < 2
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: opening to write would not wait
        try:
            assert (await failure_of(files.write(str(fifo), "x"))).error_type == "invalid_target"
            assert os.read(reader, 10) == b""  # nothing was sent into the pipe
        finally:
            os.close(reader)
    assert (await failure_of(files.write("/dev/null", "x"))).error_type == "invalid_target"


async def test_read_limit(files: WrittenOut, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with open(big, "wb") as handle:  # noqa: ASYNC230
        handle.truncate(READ_LIMIT + 1)  # sparse: no real disk use
    error = await failure_of(files.read(str(big)))
    assert (error.errno_name, error.error_type) == ("EFBIG", "too_large")
    assert "download" in error.message


async def test_reads_either_side_of_the_inline_limit_and_of_files_that_say_size_0(
    files: WrittenOut, tmp_path: Path
) -> None:
    """Small files are read on the event loop, bigger ones in the worker thread, whole either way;
    a procfs file says size 0 and is read whole too."""
    for size in (0, 1, INLINE_READ_LIMIT, INLINE_READ_LIMIT + 1, 3 * INLINE_READ_LIMIT):
        text = ("0123456789abcde\n" * (size // 16 + 1))[:size]
        path = tmp_path / f"f{size}.txt"
        path.write_text(text)
        assert (await files.read(str(path)))["content"] == text
    status = (await files.read("/proc/self/status"))["content"]
    assert status.startswith("Name:") and "Pid:" in status


def test_a_file_that_grew_after_its_stat_is_read_on_up_to_the_limit() -> None:
    assert read_up_to(io.BytesIO(b"abc"), 3, 10) == b"abc"
    assert read_up_to(io.BytesIO(b"abcdef"), 3, 10) == b"abcdef"
    assert read_up_to(io.BytesIO(b"x" * 20), 3, 10) == b"x" * 11  # one past the limit: refused as too large


def _read_here(path: str) -> dict:
    try:
        anyio.run(FilePlane(GatewaySettings.from_env({})).read, path)
    except FileOperationError as exc:
        return error_fields(exc)
    raise AssertionError("read succeeded")


def _read_as_nobody(path: str) -> dict:
    """Read ``path`` through the plane in a forked child that dropped root (root bypasses modes)."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 1
        try:
            os.close(reader)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                anyio.run(FilePlane(GatewaySettings.from_env({})).read, path)
                outcome: dict = {"unexpected": "read succeeded"}
            except FileOperationError as exc:
                outcome = error_fields(exc)
            os.write(writer, json.dumps(outcome).encode())
            code = 0
        except BaseException as exc:
            os.write(writer, json.dumps({"child failed": repr(exc)}).encode())
        finally:
            os._exit(code)
    os.close(writer)
    chunks = []
    while chunk := os.read(reader, 65536):
        chunks.append(chunk)
    os.close(reader)
    _, status = os.waitpid(pid, 0)
    outcome = json.loads(b"".join(chunks))
    assert os.waitstatus_to_exitcode(status) == 0, outcome
    return outcome


@pytest.mark.skipif(sys.platform != "linux", reason="uses Linux credentials")
def test_permission_denied(tmp_path: Path) -> None:
    """Sync on purpose: the fork must happen outside a running event loop."""
    folder = Path("/tmp") / f"agentbox-perm-{os.getpid()}"  # tmp_path's parents are closed to other users
    folder.mkdir(mode=0o755, exist_ok=True)
    secret = folder / "secret.txt"
    secret.write_text("no")
    secret.chmod(0)
    try:
        error = _read_as_nobody(str(secret)) if os.geteuid() == 0 else _read_here(str(secret))
    finally:
        secret.unlink()
        folder.rmdir()
    assert error == {
        "errno": 13,
        "errno_name": "EACCES",
        "error_type": "permission_denied",
        "exception_type": "PermissionError",
        "message": "Failed to read file: Permission denied (os error 13)",
        "operation": "read",
        "path": str(secret),
        "retryable": False,
    }


async def test_bad_arguments_are_bad_requests(files: WrittenOut, tmp_path: Path) -> None:
    target = str(tmp_path / "x.txt")
    assert (await failure_of(files.write(target, None))).error_type == "bad_request"
    assert (await failure_of(files.write(target, "%%%", encoding="base64"))).error_type == "bad_request"
    assert (await failure_of(files.write(target, "x", encoding="latin-1"))).error_type == "bad_request"
    assert (await failure_of(files.read(target, start_line=-1))).error_type == "bad_request"
    assert not Path(target).exists()  # noqa: ASYNC240
    Path(target).write_text("x")  # noqa: ASYNC240
    assert (await failure_of(files.search(target, "("))).message.startswith("Failed to search file: invalid regular")


async def test_replace_and_search(files: WrittenOut, tmp_path: Path) -> None:
    target = tmp_path / "code.py"
    target.write_text("a = 1\nb = 2\na = 3\n")
    assert (await files.replace(str(target), "a =", "c ="))["replaced_count"] == 2
    assert target.read_text() == "c = 1\nb = 2\nc = 3\n"
    assert (await files.replace(str(target), "zzz", "y"))["replaced_count"] == 0
    found = await files.search(str(target), r"^c = \d")
    assert found["matches"] == ["c = 1", "c = 3"] and found["line_numbers"] == [1, 3]
    assert found["match_count"] == 2


def _tree(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "src" / "main.py").write_text("import os\nprint('Hello')\n# TODO fix\n")
    (root / "src" / "pkg" / "util.py").write_text("def hello():\n    return 'hello'\n")
    (root / "src" / "notes.md").write_text("hello notes\n")
    (root / "node_modules" / "dep" / "index.js").write_text("hello from dep\n")
    (root / ".hidden" / "secret.py").write_text("hello hidden\n")
    (root / "image.bin").write_bytes(b"hello\x00binary")
    (root / "README.md").write_text("Read me\n")


async def test_find(files: WrittenOut, tmp_path: Path) -> None:
    _tree(tmp_path)
    found = await files.find(str(tmp_path), "*.py")
    assert found["files"] == sorted(
        [
            str(tmp_path / ".hidden/secret.py"),
            str(tmp_path / "src/main.py"),
            str(tmp_path / "src/pkg/util.py"),
        ]
    )
    assert found["file_count"] == 3
    error = await failure_of(files.find(str(tmp_path / "README.md"), "*"))
    assert error.errno_name == "ENOTDIR"


async def test_list(files: WrittenOut, tmp_path: Path) -> None:
    _tree(tmp_path)
    top = await files.list(str(tmp_path))
    names = [f["name"] for f in top["files"]]
    assert names == ["README.md", "image.bin", "node_modules", "src"]
    assert (top["total_count"], top["directory_count"], top["file_count"]) == (4, 2, 2)
    readme = next(f for f in top["files"] if f["name"] == "README.md")
    assert readme["size"] == 8 and readme["extension"] == ".md" and readme["is_directory"] is False
    assert "T" in readme["modified_time"]
    hidden = await files.list(str(tmp_path), ListQuery(show_hidden=True))
    assert ".hidden" in [f["name"] for f in hidden["files"]]
    python = await files.list(str(tmp_path), ListQuery(recursive=True, file_types=[".py"]))
    assert sorted(f["name"] for f in python["files"] if not f["is_directory"]) == ["main.py", "util.py"]
    by_type = await files.list(str(tmp_path), ListQuery(sort_by="type", include_permissions=True))
    assert [f["is_directory"] for f in by_type["files"]] == [True, True, False, False]
    assert by_type["files"][0]["permissions"] == format(stat.S_IMODE(os.stat(tmp_path / "node_modules").st_mode), "03o")
    assert (await failure_of(files.list(str(tmp_path / "nope")))).error_type == "not_found"


async def test_grep(files: WrittenOut, tmp_path: Path) -> None:
    _tree(tmp_path)
    result = await files.grep(str(tmp_path), GrepQuery("hello"))
    hits = sorted((Path(m["file"]).relative_to(tmp_path).as_posix(), m["line_number"]) for m in result["matches"])
    # hidden files and binary files are skipped, as ripgrep does
    assert hits == [
        ("node_modules/dep/index.js", 1),
        ("src/notes.md", 1),
        ("src/pkg/util.py", 1),
        ("src/pkg/util.py", 2),
    ]
    assert result["files_matched"] == 3 and result["truncated"] is False
    assert result["files_searched"] == 5  # README, main.py, util.py, notes.md, index.js; not image.bin
    insensitive = await files.grep(
        str(tmp_path), GrepQuery("hello", case_insensitive=True, exclude=["node_modules"], include=["*.py"])
    )
    assert [(Path(m["file"]).name, m["line_content"]) for m in insensitive["matches"]] == [
        ("main.py", "print('Hello')"),
        ("util.py", "def hello():"),
        ("util.py", "    return 'hello'"),
    ]
    context = await files.grep(str(tmp_path / "src" / "main.py"), GrepQuery("Hello", context_before=1, context_after=5))
    assert context["matches"] == [
        {
            "file": str(tmp_path / "src/main.py"),
            "line_number": 2,
            "line_content": "print('Hello')",
            "context_before": ["import os"],
            "context_after": ["# TODO fix"],
        }
    ]
    literal = await files.grep(str(tmp_path), GrepQuery("print('Hello')", fixed_strings=True))
    assert literal["match_count"] == 1


async def test_grep_limits(files: WrittenOut, tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("match\n" * (GREP_MAX_MATCHES + 10))
    big = tmp_path / "big.txt"
    big.write_text("match\n" + "x" * (1024 * 1024))
    result = await files.grep(str(tmp_path), GrepQuery("match", max_results=10_000))
    assert result["match_count"] == GREP_MAX_MATCHES and result["truncated"] is True
    assert {m["file"] for m in result["matches"]} == {str(tmp_path / "many.txt")}  # big.txt (>1 MiB) skipped
    assert (await files.grep(str(tmp_path), GrepQuery("match", max_results=3)))["match_count"] == 3


async def test_glob(files: WrittenOut, tmp_path: Path) -> None:
    _tree(tmp_path)
    result = await files.glob(str(tmp_path), GlobQuery("**/*.py"))
    assert [f["path"] for f in result["files"]] == [
        str(tmp_path / "src/main.py"),
        str(tmp_path / "src/pkg/util.py"),
    ]
    first = result["files"][0]
    assert first["name"] == "main.py" and first["is_directory"] is False and first["size"] > 0
    assert result["total_count"] == 2 and result["truncated"] is False
    top = await files.glob(str(tmp_path), GlobQuery("*.md", include_metadata=False))
    assert top["files"] == [{"path": str(tmp_path / "README.md"), "name": "README.md"}]
    hidden = await files.glob(str(tmp_path), GlobQuery("**/*.py", include_hidden=True, exclude=["src"]))
    assert [f["name"] for f in hidden["files"]] == ["secret.py"]
    dirs = await files.glob(str(tmp_path), GlobQuery("*", files_only=False))
    assert {f["name"] for f in dirs["files"] if f["is_directory"]} == {"node_modules", "src"}
    capped = await files.glob(str(tmp_path), GlobQuery("**", max_results=2))
    assert capped["total_count"] == 2 and capped["truncated"] is True


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "dir/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("src/**", "src/a/b", True),
        ("file?.txt", "file1.txt", True),
        ("[!a]*.txt", "a.txt", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.py", False),
    ],
)
def test_glob_translation(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_to_regex(pattern).match(path)) is matches


async def test_upload_and_download_helpers(files: WrittenOut, tmp_path: Path) -> None:
    import io

    saved = await files.save_upload(str(tmp_path), "report.pdf", io.BytesIO(b"%PDF-1.7 data"))
    assert saved == {"file_path": str(tmp_path / "report.pdf"), "file_size": 13, "success": True}
    target = await files.download_target(saved["file_path"])
    target.close()
    assert target.name == "report.pdf" and target.info.st_size == 13
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".upload-")]  # noqa: ASYNC240
    assert (await failure_of(files.download_target(str(tmp_path)))).error_type == "invalid_target"


async def test_a_download_sends_the_file_it_checked_when_the_name_is_swapped(files: WrittenOut, tmp_path: Path) -> None:
    checked = tmp_path / "report.txt"
    checked.write_bytes(b"the checked bytes")
    target = await files.download_target(str(checked))
    try:
        checked.unlink()
        os.mkfifo(checked)  # between the checks and the response's open: a FIFO would hold it forever
        with open(target.path, "rb") as sent:  # noqa: ASYNC230 - what the response opens
            assert sent.read() == b"the checked bytes"
        assert target.name == "report.txt" and target.info.st_size == 17
    finally:
        target.close()


async def test_results_are_frozen_records_and_errors_are_plane_errors_of_a_kind(tmp_path: Path) -> None:
    """The plane answers with typed records (the doors write them out) and fails with a PlaneError
    whose kind says what a caller can do, the finer aiod error_type kept beside it."""
    plane = FilePlane(GatewaySettings.from_env({}))
    target = tmp_path / "x.txt"
    written = await plane.write(str(target), "hi\n")
    assert written == FileWritten(str(target), 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        written.bytes_written = 0  # type: ignore[misc]
    assert await plane.read(str(target)) == FileRead(str(target), "hi\n")
    big = tmp_path / "big.bin"
    with open(big, "wb") as handle:  # noqa: ASYNC230
        handle.truncate(READ_LIMIT + 1)
    failures = {
        ErrorKind.NOT_FOUND: plane.read(str(tmp_path / "missing")),
        ErrorKind.INVALID: plane.read("relative.txt"),
        ErrorKind.TOO_LARGE: plane.read(str(big)),
    }
    for kind, call in failures.items():
        error = await failure_of(call)
        assert isinstance(error, PlaneError) and error.kind is kind, (kind, error)
    assert (await failure_of(plane.read(str(tmp_path)))).kind is ErrorKind.INVALID  # a directory


def test_query_of_a_request() -> None:
    """A door's request names the options; what it leaves out or sets to null keeps the default."""
    fields = {"path": "/x", "pattern": "a", "type": "py", "max_results": None, "show_hidden": True}
    assert GrepQuery.of(fields, file_type="type") == GrepQuery("a", file_type="py")
    assert GlobQuery.of(fields, include_hidden="show_hidden") == GlobQuery("a", include_hidden=True)
    assert ListQuery.of({"sort_by": None, "recursive": True}) == ListQuery(recursive=True, sort_by="name")
