"""``/v2/fs/*`` driven as AIO's documentation describes it (website/docs/en/daemon/basic/file.mdx,
examples/file-ops.mdx, start/migration.md), with plain httpx against a real gateway on 127.0.0.1:
the documented fields, statuses and structured errors, not agentbox's own helpers."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app
from tests.support.v2 import v2_data

KEY = "v2-fs-test-key"
ERROR_FIELDS = {"errno", "errno_name", "error_type", "exception_type", "message", "operation", "path", "retryable"}


@pytest.fixture(scope="module")
def client(module_gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=module_gateway, timeout=30) as http:
        yield http


def failure(response: httpx.Response, status: int, error_type: str) -> dict:
    """The documented v2 failure: the status, the envelope with ``success: false``, the fields."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False
    assert ERROR_FIELDS <= set(body["data"]), body
    assert body["data"]["error_type"] == error_type
    assert body["message"] == body["data"]["message"]
    return body["data"]


def test_the_documented_scaffold_search_edit_read_story(client: httpx.Client, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    made = v2_data(client.post("/v2/fs/mkdir", json={"path": f"{demo}/src", "parents": True}))
    assert made["path"] == f"{demo}/src"
    app = (
        "import sys\n\n"
        "def main():\n"
        "    # TODO: read the input path from argv\n"
        "    print('hello')\n\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    written = v2_data(client.post("/v2/fs/write", json={"path": f"{demo}/src/app.py", "content": app}))
    assert written == {"file": f"{demo}/src/app.py", "bytes_written": len(app)}
    v2_data(client.post("/v2/fs/write", json={"path": f"{demo}/README.md", "content": "# demo\n"}))

    listed = v2_data(client.get("/v2/fs/list", params={"path": str(demo), "recursive": "true"}))
    assert sorted(f["path"] for f in listed["files"]) == [f"{demo}/README.md", f"{demo}/src", f"{demo}/src/app.py"]
    assert (listed["total_count"], listed["file_count"], listed["directory_count"]) == (3, 2, 1)
    assert listed["truncated"] is False

    found = v2_data(client.get("/v2/fs/search", params={"path": str(demo), "pattern": "**/*.py"}))
    assert found["files"] == [f"{demo}/src/app.py"]
    target = found["files"][0]
    hit = v2_data(client.post("/v2/fs/grep", json={"path": target, "pattern": "TODO.*"}))
    assert [(m["line_number"], m["line_content"]) for m in hit["matches"]] == [
        (4, "    # TODO: read the input path from argv")
    ]

    edited = v2_data(
        client.post(
            "/v2/fs/edit",
            json={
                "command": "str_replace",
                "path": target,
                "old_str": "    # TODO: read the input path from argv\n    print('hello')",
                "new_str": "    path = sys.argv[1]\n    print(open(path).read())",
            },
        )
    )
    assert edited["old_content"] == app and "sys.argv[1]" in edited["new_content"]
    assert "cat -n" in edited["output"] and edited["prev_exist"] is True

    result = v2_data(client.get("/v2/fs/read", params={"path": target, "start_line": 2, "end_line": 5}))
    assert result["content"] == "def main():\n    path = sys.argv[1]\n    print(open(path).read())\n"


def test_write_encodings_and_append(client: httpx.Client, tmp_path: Path) -> None:
    blob = bytes(range(256))
    target = tmp_path / "out" / "blob.bin"  # a missing parent is created
    written = v2_data(
        client.post(
            "/v2/fs/write", json={"path": str(target), "content": base64.b64encode(blob).decode(), "encoding": "base64"}
        )
    )
    assert written["bytes_written"] == 256 and target.read_bytes() == blob

    raw = tmp_path / "raw.bin"
    v2_data(client.post("/v2/fs/write", json={"path": str(raw), "content": "caf\u00e9\u00ff", "encoding": "raw"}))
    assert raw.read_bytes() == b"caf\xe9\xff"  # one character, one byte
    refused = client.post("/v2/fs/write", json={"path": str(raw), "content": "\u20ac", "encoding": "raw"})
    failure(refused, 400, "bad_request")
    assert raw.read_bytes() == b"caf\xe9\xff"

    text = tmp_path / "log.txt"
    v2_data(client.post("/v2/fs/write", json={"path": str(text), "content": "one", "trailing_newline": True}))
    v2_data(
        client.post(
            "/v2/fs/write", json={"path": str(text), "content": "two", "append": True, "leading_newline": False}
        )
    )
    v2_data(
        client.post(
            "/v2/fs/write", json={"path": str(text), "content": "three", "append": True, "leading_newline": True}
        )
    )
    assert text.read_text() == "one\ntwo\nthree"


def test_read_errors_carry_the_structured_fields(client: httpx.Client, tmp_path: Path) -> None:
    missing = failure(client.get("/v2/fs/read", params={"path": str(tmp_path / "nope")}), 404, "not_found")
    assert missing["errno"] == 2 and missing["errno_name"] == "ENOENT"
    assert missing["exception_type"] == "FileNotFoundError"
    assert missing["operation"] == "read" and missing["path"] == str(tmp_path / "nope")
    assert missing["retryable"] is False

    directory = failure(client.get("/v2/fs/read", params={"path": str(tmp_path)}), 400, "invalid_target")
    assert directory["errno_name"] == "EISDIR"

    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9\n")
    failure(client.get("/v2/fs/read", params={"path": str(latin)}), 422, "decode_error")

    big = tmp_path / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(16 * 1024 * 1024 + 1)
    too_big = failure(client.get("/v2/fs/read", params={"path": str(big)}), 413, "too_large")
    assert "exceeds the 16 MiB buffered text limit" in too_big["message"]

    relative = failure(client.get("/v2/fs/read", params={"path": "relative.txt"}), 400, "invalid_path")
    assert relative["errno"] is None


def test_malformed_query_and_body_are_422_with_locations(client: httpx.Client) -> None:
    response = client.get("/v2/fs/read")
    assert response.status_code == 422
    assert response.json()["errors"][0]["location"][:2] == ["query", "path"]
    response = client.post("/v2/fs/write", json={"path": "/tmp/x"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["location"][:2] == ["body", "content"]


def test_edit_modes_insert_undo_and_refusals(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "edit.txt"
    target.write_text("a x\nb x\nc x\n")

    def edit(**body: object) -> httpx.Response:
        return client.post("/v2/fs/edit", json={"path": str(target), **body})

    twice = edit(command="str_replace", old_str="x", new_str="y")
    assert twice.status_code == 400 and "replace_mode" in twice.json()["message"]
    assert edit(command="str_replace", old_str="zzz", new_str="y").status_code == 400
    assert target.read_text() == "a x\nb x\nc x\n"

    v2_data(edit(command="str_replace", old_str="x", new_str="1", replace_mode="FIRST"))
    assert target.read_text() == "a 1\nb x\nc x\n"
    v2_data(edit(command="str_replace", old_str="x", new_str="3", replace_mode="LAST"))
    assert target.read_text() == "a 1\nb x\nc 3\n"
    v2_data(edit(command="str_replace", old_str="1", new_str="x", replace_mode="ALL"))
    v2_data(edit(command="str_replace", old_str="x", new_str="z", replace_mode="ALL"))
    assert target.read_text() == "a z\nb z\nc 3\n"

    v2_data(edit(command="insert", insert_line=1, new_str="inserted"))
    assert target.read_text() == "a z\ninserted\nb z\nc 3\n"
    undone = v2_data(edit(command="undo_edit"))
    assert undone["new_content"] == "a z\nb z\nc 3\n" == target.read_text()

    for command, route in (("view", "GET /v2/fs/read"), ("create", "POST /v2/fs/write")):
        refused = edit(command=command)
        assert refused.status_code == 400 and route in refused.json()["message"]
    assert edit(command="str_replace", old_str="z", new_str="q", replace_mode="SOME").status_code == 422


def test_stat_follows_links_or_not(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("12345")
    target.chmod(0o640)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)

    info = v2_data(client.get("/v2/fs/stat", params={"path": str(target)}))
    assert info["size"] == 5 and info["permissions"] == "640"
    assert info["is_directory"] is False and info["is_symlink"] is False
    assert info["path"] == str(target) and info["modified_time"]
    followed = v2_data(client.get("/v2/fs/stat", params={"path": str(link)}))
    assert followed["is_directory"] is True and followed["is_symlink"] is True
    itself = v2_data(client.get("/v2/fs/stat", params={"path": str(link), "follow_symlinks": "false"}))
    assert itself["is_directory"] is False and itself["is_symlink"] is True
    failure(client.get("/v2/fs/stat", params={"path": str(tmp_path / "gone")}), 404, "not_found")


def test_list_hidden_permissions_and_depth(client: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / ".hidden").write_text("h")
    (tmp_path / "shown.py").write_text("s")
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "leaf.txt").write_text("l")

    listed = v2_data(client.get("/v2/fs/list", params={"path": str(tmp_path)}))
    entries = {f["name"]: f for f in listed["files"]}
    assert set(entries) == {".hidden", "shown.py", "sub"}  # show_hidden is on by default
    assert entries[".hidden"]["is_hidden"] is True and "is_hidden" not in entries["shown.py"]
    assert "permissions" not in entries["shown.py"]
    assert entries["shown.py"]["extension"] == ".py" and entries["shown.py"]["size"] == 1
    assert entries["sub"]["is_directory"] is True

    hidden_off = v2_data(client.get("/v2/fs/list", params={"path": str(tmp_path), "show_hidden": "false"}))
    assert ".hidden" not in {f["name"] for f in hidden_off["files"]}
    with_modes = v2_data(client.get("/v2/fs/list", params={"path": str(tmp_path), "include_permissions": "true"}))
    assert all(len(f["permissions"]) == 3 for f in with_modes["files"])
    shallow = v2_data(client.get("/v2/fs/list", params={"path": str(tmp_path), "recursive": "true", "max_depth": 2}))
    assert f"{tmp_path}/sub/deeper" in {f["path"] for f in shallow["files"]}
    assert f"{tmp_path}/sub/deeper/leaf.txt" not in {f["path"] for f in shallow["files"]}
    failure(client.get("/v2/fs/list", params={"path": str(tmp_path / "shown.py")}), 400, "invalid_path")


def test_grep_options(client: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\nTwo needle\nthree\n")
    (tmp_path / "b.txt").write_text("needle.\n")
    hits = v2_data(
        client.post(
            "/v2/fs/grep",
            json={"path": str(tmp_path), "pattern": "needle.", "fixed_strings": True, "recursive": True},
        )
    )
    assert [m["file"] for m in hits["matches"]] == [str(tmp_path / "b.txt")]
    context = v2_data(
        client.post(
            "/v2/fs/grep",
            json={
                "path": str(tmp_path),
                "pattern": "two",
                "case_insensitive": True,
                "context_before": 1,
                "context_after": 1,
            },
        )
    )
    match = context["matches"][0]
    assert match["line_number"] == 2 and match["context_before"] == ["one"] and match["context_after"] == ["three"]
    failure(client.post("/v2/fs/grep", json={"path": str(tmp_path), "pattern": "("}), 400, "bad_request")


def test_mkdir_copy_move_delete(client: httpx.Client, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    v2_data(client.post("/v2/fs/mkdir", json={"path": str(tree)}))
    failure(client.post("/v2/fs/mkdir", json={"path": str(tree)}), 409, "already_exists")
    assert v2_data(client.post("/v2/fs/mkdir", json={"path": str(tree), "parents": True}))["created"] is False
    failure(client.post("/v2/fs/mkdir", json={"path": str(tmp_path / "no" / "parent")}), 404, "not_found")
    (tree / "f.txt").write_text("first")
    (tree / "inner").mkdir()
    (tree / "inner" / "g.txt").write_text("g")

    copied = v2_data(client.post("/v2/fs/copy", json={"path": str(tree), "destination": str(tmp_path / "copy")}))
    assert copied == {"path": str(tmp_path / "copy"), "source": str(tree)}
    assert (tmp_path / "copy" / "inner" / "g.txt").read_text() == "g"
    clash = client.post(
        "/v2/fs/copy", json={"path": str(tree / "f.txt"), "destination": str(tmp_path / "copy" / "inner" / "g.txt")}
    )
    assert failure(clash, 409, "already_exists")["errno_name"] == "EEXIST"
    assert (tmp_path / "copy" / "inner" / "g.txt").read_text() == "g"
    v2_data(
        client.post(
            "/v2/fs/copy",
            json={
                "path": str(tree / "f.txt"),
                "destination": str(tmp_path / "copy" / "inner" / "g.txt"),
                "overwrite": True,
            },
        )
    )
    assert (tmp_path / "copy" / "inner" / "g.txt").read_text() == "first"
    into_itself = client.post("/v2/fs/copy", json={"path": str(tree), "destination": str(tree / "inner" / "again")})
    failure(into_itself, 400, "invalid_target")
    assert not (tree / "inner" / "again").exists()

    moved = tmp_path / "moved.txt"
    v2_data(client.post("/v2/fs/move", json={"path": str(tree / "f.txt"), "destination": str(moved)}))
    assert moved.read_text() == "first" and not (tree / "f.txt").exists()
    (tmp_path / "other.txt").write_text("other")
    failure(
        client.post("/v2/fs/move", json={"path": str(tmp_path / "other.txt"), "destination": str(moved)}),
        409,
        "already_exists",
    )
    v2_data(
        client.post(
            "/v2/fs/move", json={"path": str(tmp_path / "other.txt"), "destination": str(moved), "overwrite": True}
        )
    )
    assert moved.read_text() == "other"
    # a directory over a directory, with overwrite: the old one is replaced whole
    v2_data(
        client.post("/v2/fs/move", json={"path": str(tmp_path / "copy"), "destination": str(tree), "overwrite": True})
    )
    assert (tree / "f.txt").read_text() == "first" and not (tmp_path / "copy").exists()
    failure(
        client.post("/v2/fs/move", json={"path": str(tmp_path / "none"), "destination": str(tmp_path / "x")}),
        404,
        "not_found",
    )

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    (tree / "link").symlink_to(outside)
    v2_data(client.post("/v2/fs/delete", json={"path": str(tree / "link")}))
    assert (outside / "keep.txt").read_text() == "keep"  # the link went, not what it pointed at
    not_empty = failure(client.post("/v2/fs/delete", json={"path": str(tree)}), 409, "already_exists")
    assert not_empty["errno_name"] == "ENOTEMPTY" and tree.exists()
    v2_data(client.post("/v2/fs/delete", json={"path": str(tree), "recursive": True}))
    assert not tree.exists()
    failure(client.post("/v2/fs/delete", json={"path": str(tree)}), 404, "not_found")
    failure(client.post("/v2/fs/delete", json={"path": "/", "recursive": True}), 400, "invalid_path")


def test_upload_is_multipart_and_lands_whole(client: httpx.Client, tmp_path: Path) -> None:
    payload = os.urandom(3 * 1024 * 1024)
    target = tmp_path / "data.bin"
    response = client.post("/v2/fs/upload", files={"file": ("data.bin", payload)}, data={"path": str(target)})
    assert v2_data(response) == {"file_path": str(target), "file_size": len(payload), "success": True}
    assert target.read_bytes() == payload
    into_directory = v2_data(
        client.post("/v2/fs/upload", files={"file": ("named.csv", b"a,b\n")}, data={"path": f"{tmp_path}/"})
    )
    assert into_directory["file_path"] == f"{tmp_path}/named.csv"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin", "named.csv"]  # no staging file left


def test_download_ranges_and_validators(client: httpx.Client, tmp_path: Path) -> None:
    payload = os.urandom(300_000)
    target = tmp_path / "payload.bin"
    target.write_bytes(payload)
    url, params = "/v2/fs/download", {"path": str(target)}

    whole = client.get(url, params=params)
    assert whole.status_code == 200 and whole.content == payload
    assert whole.headers["accept-ranges"] == "bytes" and whole.headers["last-modified"]
    etag = whole.headers["etag"]
    assert etag.startswith('"') and int(whole.headers["content-length"]) == len(payload)

    head = client.head(url, params=params)
    assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == etag
    assert int(head.headers["content-length"]) == len(payload)

    part = client.get(url, params=params, headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == payload[100:200]
    assert part.headers["content-range"] == f"bytes 100-199/{len(payload)}"
    tail = client.get(url, params=params, headers={"Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == payload[-10:]
    open_ended = client.get(url, params=params, headers={"Range": "bytes=299990-"})
    assert open_ended.content == payload[299990:]
    assert client.get(url, params=params, headers={"Range": "bytes=400000-"}).status_code == 416

    assert client.get(url, params=params, headers={"If-None-Match": etag}).status_code == 304
    stale_range = client.get(url, params=params, headers={"Range": "bytes=0-9", "If-Range": '"other"'})
    assert stale_range.status_code == 200 and stale_range.content == payload

    target.write_bytes(payload[:1000])  # another version: the old validator no longer matches
    changed = client.get(url, params=params, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.content == payload[:1000] and changed.headers["etag"] != etag
    assert client.get(url, params=params, headers={"If-Match": etag}).status_code == 412

    missing = client.get(url, params={"path": str(tmp_path / "missing")})
    failure(missing, 404, "not_found")
    failure(client.get(url, params={"path": str(tmp_path)}), 400, "invalid_target")


def test_change_policy_abort_refuses_a_changed_version(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "pinned.txt"
    target.write_text("version one\n")
    etag = client.head("/v2/fs/download", params={"path": str(target)}).headers["etag"]
    same = client.get(
        "/v2/fs/download", params={"path": str(target), "change_policy": "abort"}, headers={"If-Match": etag}
    )
    assert same.status_code == 200 and same.content == b"version one\n"

    target.write_text("version two, longer\n")
    refused = client.get(
        "/v2/fs/download", params={"path": str(target), "change_policy": "abort"}, headers={"If-Match": etag}
    )
    conflict = failure(refused, 409, "file_changed")
    assert conflict["retryable"] is True and "change_policy=abort" in conflict["message"]
    bad = client.get("/v2/fs/download", params={"path": str(target), "change_policy": "sometimes"})
    assert bad.status_code == 422


def _stream_and_change(url: str, target: Path, policy: str) -> tuple[int, Exception | None]:
    """Start a download, append to the file once the first bytes arrived, read on; the bytes
    received and the error the transfer ended with."""
    received, error = 0, None
    with httpx.Client(base_url=url, timeout=30) as http:
        try:
            with http.stream(
                "GET", "/v2/fs/download", params={"path": str(target), "change_policy": policy}
            ) as response:
                assert response.status_code == 200
                for chunk in response.iter_raw(64 * 1024):
                    if received == 0:
                        with target.open("ab") as handle:
                            handle.write(b"appended while streaming")
                    received += len(chunk)
        except httpx.HTTPError as exc:
            error = exc
    return received, error


def test_change_policy_abort_cuts_a_transfer_that_changes(module_gateway: str, tmp_path: Path) -> None:
    size = 64 * 1024 * 1024  # far more than the sockets buffer: the change lands mid-transfer
    target = tmp_path / "moving.bin"
    with target.open("wb") as handle:
        handle.truncate(size)

    received, error = _stream_and_change(module_gateway, target, "abort")
    assert isinstance(error, httpx.RemoteProtocolError), error
    assert 0 < received < size

    target.write_bytes(b"")
    with target.open("wb") as handle:
        handle.truncate(size)
    received, error = _stream_and_change(module_gateway, target, "follow")
    assert error is None and received == size  # follow: whatever the kernel reads, the declared length


@pytest.fixture(scope="module")
def keyed_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    skills = tmp_path_factory.mktemp("skills")
    settings = replace(GatewaySettings.from_env({}), skills_path=skills, browser_proxy_port=0, api_key=KEY)
    with serve_app(build_app(settings)) as url:
        yield url


@pytest.mark.parametrize(
    ("method", "route"),
    [
        ("GET", "read"),
        ("POST", "write"),
        ("POST", "edit"),
        ("GET", "stat"),
        ("GET", "list"),
        ("GET", "search"),
        ("POST", "grep"),
        ("POST", "mkdir"),
        ("POST", "copy"),
        ("POST", "move"),
        ("POST", "delete"),
        ("POST", "upload"),
        ("GET", "download"),
        ("GET", "tree"),
        ("PUT", "tree"),
    ],
)
def test_every_route_needs_the_key(keyed_gateway: str, tmp_path: Path, method: str, route: str) -> None:
    sentinel = tmp_path / "untouched"
    params = {"path": str(sentinel)}
    refused = httpx.request(
        method, f"{keyed_gateway}/v2/fs/{route}", params=params, json={"path": str(sentinel), "content": "x"}
    )
    assert refused.status_code == 401
    assert not sentinel.exists()
    allowed = httpx.get(
        f"{keyed_gateway}/v2/fs/stat", params={"path": str(tmp_path)}, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert allowed.status_code == 200


def test_json_bodies_are_capped_as_on_v1(tmp_path: Path, gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, max_json_body_bytes=1024))) as url:
        target = tmp_path / "capped.txt"
        response = httpx.post(f"{url}/v2/fs/write", json={"path": str(target), "content": "x" * 4096})
        assert response.status_code == 413 and response.json()["success"] is False
        assert not target.exists()
        small = httpx.post(f"{url}/v2/fs/write", json={"path": str(target), "content": "x"})
        assert small.status_code == 200
