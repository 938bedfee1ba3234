"""sandboxd's filesystem and runtime REST API, through the official SDK's ``files`` where it has a
call for it (write, read, read_to, list, exists, delete) and httpx for what it does not send
(multipart, modes, HEAD, bad parameters). The behaviours are the reference server's
(``packages/sandboxd/pkg/server/filesystem_test.go``) and the user guide's concurrency rules."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import httpx
import pytest
import requests
from k8s_agent_sandbox.exceptions import SandboxRequestError

from .conftest import Sandboxd


def url(sandboxd: Sandboxd, path: str) -> str:
    return f"{sandboxd.rest}/v1/files/{path}"


def test_write_then_read(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/notes/hello.txt", b"hello world")
    assert sandboxd.files.read(f"{workdir}/notes/hello.txt") == b"hello world"
    assert (sandboxd.root / workdir / "notes" / "hello.txt").read_bytes() == b"hello world"


def test_read_to_streams_a_large_file(sandboxd: Sandboxd, workdir: str) -> None:
    data = os.urandom(5 * 1024 * 1024 + 17)
    sandboxd.files.write(f"{workdir}/big.bin", data)
    sink = io.BytesIO()
    sandboxd.files.read_to(f"{workdir}/big.bin", sink)
    assert sink.getvalue() == data


def test_list_describes_entries(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/a.txt", b"12345")
    (sandboxd.root / workdir / "sub").mkdir()
    entries = {entry.name: entry for entry in sandboxd.files.list(workdir)}
    assert set(entries) == {"a.txt", "sub"}
    assert (entries["a.txt"].type, entries["a.txt"].size, entries["a.txt"].mode) == ("file", 5, "0644")
    assert entries["sub"].type == "directory"
    listing = httpx.get(url(sandboxd, workdir)).json()
    assert listing["path"] == f"/{workdir}"
    assert listing["entries"][0]["modified_at"].endswith("Z")


def test_an_empty_directory_lists_no_entries(sandboxd: Sandboxd, workdir: str) -> None:
    assert httpx.get(url(sandboxd, workdir)).json() == {"path": f"/{workdir}", "entries": []}
    assert sandboxd.files.list(workdir) == []


def test_the_root_lists_by_dot(sandboxd: Sandboxd, workdir: str) -> None:
    assert workdir in {entry.name for entry in sandboxd.files.list(".")}


def test_exists_probes_with_head(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/here.txt", b"x" * 10)
    assert sandboxd.files.exists(f"{workdir}/here.txt")
    assert not sandboxd.files.exists(f"{workdir}/missing.txt")
    head = httpx.head(url(sandboxd, f"{workdir}/here.txt"))
    assert (head.status_code, head.headers["content-length"], head.content) == (200, "10", b"")


def test_a_missing_file_is_404_with_the_specs_body(sandboxd: Sandboxd, workdir: str) -> None:
    answer = httpx.get(url(sandboxd, f"{workdir}/missing.txt"))
    assert answer.status_code == 404 and answer.json()["code"] == "NOT_FOUND"


def test_put_applies_mode(sandboxd: Sandboxd, workdir: str) -> None:
    answer = httpx.put(url(sandboxd, f"{workdir}/run.sh"), params={"mode": "0755"}, content=b"#!/bin/sh\n")
    assert answer.status_code == 204
    assert (sandboxd.root / workdir / "run.sh").stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize("mode", ["755", "0999", "07555", "rw", ""])
def test_an_invalid_mode_is_refused(sandboxd: Sandboxd, workdir: str, mode: str) -> None:
    answer = httpx.put(url(sandboxd, f"{workdir}/x"), params={"mode": mode}, content=b"x")
    assert (answer.status_code, answer.json()["code"]) == (400, "INVALID_ARGUMENT")
    assert not (sandboxd.root / workdir / "x").exists()


def test_put_overwrites(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/f", b"old content")
    sandboxd.files.write(f"{workdir}/f", b"new")
    assert sandboxd.files.read(f"{workdir}/f") == b"new"
    assert [p.name for p in (sandboxd.root / workdir).iterdir()] == ["f"]  # no temporary file left


def test_multipart_upload(sandboxd: Sandboxd, workdir: str) -> None:
    files = {"file": ("ignored-name.bin", b"multipart bytes", "application/octet-stream")}
    answer = httpx.put(url(sandboxd, f"{workdir}/up.bin"), files=files, data={"other": "field"})
    assert answer.status_code == 204
    assert (sandboxd.root / workdir / "up.bin").read_bytes() == b"multipart bytes"


def test_multipart_without_a_file_part_is_refused(sandboxd: Sandboxd, workdir: str) -> None:
    answer = httpx.put(url(sandboxd, f"{workdir}/up.bin"), files={"other": ("a", b"b")})
    assert (answer.status_code, answer.json()["code"]) == (400, "INVALID_ARGUMENT")
    assert not (sandboxd.root / workdir / "up.bin").exists()


def test_put_to_a_directory_is_refused(sandboxd: Sandboxd, workdir: str) -> None:
    answer = httpx.put(url(sandboxd, workdir), content=b"x")
    assert answer.status_code == 400
    assert (sandboxd.root / workdir).is_dir()


def test_encoded_slashes_name_nested_files(sandboxd: Sandboxd, workdir: str) -> None:
    assert httpx.put(f"{sandboxd.rest}/v1/files/{workdir}%2Fa%2Fb.txt", content=b"nested").status_code == 204
    assert (sandboxd.root / workdir / "a" / "b.txt").read_bytes() == b"nested"


def test_an_absolute_path_inside_the_root_names_that_file(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/abs.txt", b"abs")
    assert httpx.get(f"{sandboxd.rest}/v1/files/{sandboxd.root}/{workdir}/abs.txt").content == b"abs"


@pytest.mark.parametrize("path", ["..%2F..%2Fetc%2Fpasswd", "%2E%2E/%2E%2E/etc/passwd", "a/..%2F..%2F..%2Fetc"])
def test_traversal_is_refused(sandboxd: Sandboxd, path: str) -> None:
    answer = httpx.get(f"{sandboxd.rest}/v1/files/{path}")
    assert answer.status_code == 403
    assert answer.json() == {"code": "PERMISSION_DENIED", "message": "path traversal outside sandbox root is forbidden"}


def test_traversal_through_the_sdk_is_refused(sandboxd: Sandboxd) -> None:
    """The SDK refuses an escaping read or write itself; its list and delete leave it to us."""
    for call in (lambda: sandboxd.files.list("sub/../../.."), lambda: sandboxd.files.delete("../..", recursive=True)):
        with pytest.raises(SandboxRequestError) as refused:
            call()
        assert isinstance(refused.value.__cause__, requests.HTTPError)
        assert refused.value.__cause__.response.status_code == 403


def test_a_symlink_out_of_the_root_is_refused_and_not_listed(sandboxd: Sandboxd, workdir: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    here = sandboxd.root / workdir
    (here / "out").symlink_to(outside)
    (here / "broken").symlink_to(here / "nothing")
    (here / "inside").symlink_to(here / "target.txt")
    (here / "target.txt").write_text("inside")
    assert httpx.get(url(sandboxd, f"{workdir}/out")).status_code == 403
    assert httpx.put(url(sandboxd, f"{workdir}/out"), content=b"overwrite").status_code == 403
    assert outside.read_text() == "secret"
    assert {entry.name for entry in sandboxd.files.list(workdir)} == {"inside", "target.txt"}
    assert sandboxd.files.read(f"{workdir}/inside") == b"inside"


def test_delete_a_file(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/gone.txt", b"x")
    sandboxd.files.delete(f"{workdir}/gone.txt")
    assert not (sandboxd.root / workdir / "gone.txt").exists()
    assert httpx.delete(url(sandboxd, f"{workdir}/gone.txt")).status_code == 404


def test_delete_a_non_empty_directory_needs_recursive(sandboxd: Sandboxd, workdir: str) -> None:
    sandboxd.files.write(f"{workdir}/d/e/f.txt", b"x")
    answer = httpx.delete(url(sandboxd, f"{workdir}/d"))
    assert (answer.status_code, answer.json()["code"]) == (409, "CONFLICT")
    sandboxd.files.delete(f"{workdir}/d", recursive=True)
    assert not (sandboxd.root / workdir / "d").exists()


def test_delete_an_empty_directory(sandboxd: Sandboxd, workdir: str) -> None:
    (sandboxd.root / workdir / "empty").mkdir()
    assert httpx.delete(url(sandboxd, f"{workdir}/empty")).status_code == 204


def test_a_recursive_delete_removes_links_not_their_targets(sandboxd: Sandboxd, workdir: str, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("keep me")
    (sandboxd.root / workdir / "d").mkdir()
    (sandboxd.root / workdir / "d" / "link").symlink_to(keep)
    sandboxd.files.delete(f"{workdir}/d", recursive=True)
    assert (keep / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize("value", ["yes", "2", "TRUe", ""])
def test_an_invalid_recursive_is_refused(sandboxd: Sandboxd, workdir: str, value: str) -> None:
    answer = httpx.delete(url(sandboxd, workdir), params={"recursive": value})
    assert (answer.status_code, answer.json()["code"]) == (400, "INVALID_ARGUMENT")
    assert (sandboxd.root / workdir).is_dir()


def test_delete_of_the_root_empties_it(tmp_path: Path) -> None:
    from .conftest import sandboxd_gateway

    root = tmp_path / "root"
    with sandboxd_gateway(root) as served:
        served.files.write("a/b.txt", b"x")
        served.files.write("c.txt", b"y")
        refused = httpx.delete(f"{served.rest}/v1/files/.")
        assert refused.status_code == 409 and (root / "c.txt").exists()
        assert httpx.delete(f"{served.rest}/v1/files/.", params={"recursive": "true"}).status_code == 204
        assert root.is_dir() and list(root.iterdir()) == []


def test_a_download_outlives_a_delete(sandboxd: Sandboxd, workdir: str) -> None:
    data = os.urandom(8 * 1024 * 1024)
    sandboxd.files.write(f"{workdir}/big", data)
    with httpx.stream("GET", url(sandboxd, f"{workdir}/big")) as response:
        chunks = response.iter_bytes()
        received = next(chunks)
        assert httpx.delete(url(sandboxd, f"{workdir}/big")).status_code == 204
        received += b"".join(chunks)
    assert received == data


def test_a_reader_sees_the_old_file_or_the_new_one(sandboxd: Sandboxd, workdir: str) -> None:
    old, new = b"a" * (2 * 1024 * 1024), b"b" * (2 * 1024 * 1024)
    sandboxd.files.write(f"{workdir}/swap", old)
    seen: list[bytes] = []
    stop = threading.Event()

    def read() -> None:
        with httpx.Client() as client:
            while not stop.is_set():
                seen.append(client.get(url(sandboxd, f"{workdir}/swap")).content)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(10):
            sandboxd.files.write(f"{workdir}/swap", new)
            sandboxd.files.write(f"{workdir}/swap", old)
    finally:
        stop.set()
        reader.join(30)
    assert seen and all(body in (old, new) for body in seen)


def test_health(sandboxd: Sandboxd) -> None:
    answer = httpx.get(f"{sandboxd.rest}/v1/health").json()
    assert answer["status"] == "ok" and isinstance(answer["uptime_seconds"], int)


def test_metadata_shows_the_prefix_but_no_credential(sandboxd: Sandboxd) -> None:
    env = httpx.get(f"{sandboxd.rest}/v1/metadata").json()["env"]
    assert env.get("SANDBOX_ID") == "agentbox-test"
    assert "SANDBOX_API_TOKEN" not in env
    assert all(name.startswith("SANDBOX_") for name in env)


def test_an_unknown_route_answers_in_the_specs_shape(sandboxd: Sandboxd) -> None:
    answer = httpx.get(f"{sandboxd.rest}/v1/nothing")
    assert answer.status_code == 404 and answer.json()["code"] == "NOT_FOUND"
    assert httpx.post(url(sandboxd, "x")).status_code == 405
