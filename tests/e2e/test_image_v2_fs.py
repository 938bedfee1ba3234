"""``/v2/fs/*`` in the image, as AIO's file-ops example drives it with plain httpx: scaffold, search,
edit and read back a project in the workspace, move files in and out (upload, download with a
range, ``change_policy=abort`` answering 409 once the file changed), a whole directory as tar both
ways, a hostile archive refused with nothing written, structured errors, and the key guarding it all."""

from __future__ import annotations

import io
import tarfile

import httpx
import pytest

from tests.support.v2 import v2_data

from .dockerbox import Box

pytestmark = pytest.mark.docker

ROOT = "/workspace/fs-e2e"


def hostile_tar() -> bytes:
    """A fine file, then a member climbing out with ``..``: the whole archive must be refused."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in ("fine.txt", "../escaped.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"x\n"))
    return buffer.getvalue()


def test_the_file_routes_in_the_image(box: Box, auth: dict[str, str]) -> None:
    assert httpx.get(box.url(8091, "/v2/fs/list"), params={"path": "/workspace"}, timeout=10).status_code == 401
    with httpx.Client(base_url=box.url(8091), headers=auth, timeout=60) as api:
        app = f"{ROOT}/src/app.py"
        v2_data(api.post("/v2/fs/mkdir", json={"path": f"{ROOT}/src", "parents": True}))
        source = "import sys\n\ndef main():\n    # TODO: read argv\n    print('hello')\n"
        assert v2_data(api.post("/v2/fs/write", json={"path": app, "content": source}))["bytes_written"] == len(source)
        listed = v2_data(api.get("/v2/fs/list", params={"path": ROOT, "recursive": True}))
        assert {entry["path"] for entry in listed["files"]} == {f"{ROOT}/src", app}
        found = v2_data(api.get("/v2/fs/search", params={"path": ROOT, "pattern": "**/*.py"}))
        assert found["files"] == [app]
        hit = v2_data(api.post("/v2/fs/grep", json={"path": app, "pattern": "TODO.*"}))
        assert [(m["line_number"], m["line_content"]) for m in hit["matches"]] == [(4, "    # TODO: read argv")]
        edit = {"command": "str_replace", "path": app, "old_str": "    # TODO: read argv\n", "new_str": ""}
        assert "TODO" not in v2_data(api.post("/v2/fs/edit", json=edit))["new_content"]
        assert v2_data(api.get("/v2/fs/read", params={"path": app, "start_line": 2, "end_line": 4}))["content"] == (
            "def main():\n    print('hello')\n"
        )
        assert v2_data(api.get("/v2/fs/stat", params={"path": app}))["is_directory"] is False

        missing = api.get("/v2/fs/read", params={"path": f"{ROOT}/missing.txt"})
        assert missing.status_code == 404 and missing.json()["success"] is False
        error = missing.json()["data"]
        assert (error["errno"], error["errno_name"], error["error_type"]) == (2, "ENOENT", "not_found")
        assert error["retryable"] is False and error["operation"] == "read"

        payload = bytes(range(256)) * 64
        uploaded = v2_data(
            api.post("/v2/fs/upload", files={"file": ("data.bin", payload)}, data={"path": f"{ROOT}/data.bin"})
        )
        assert uploaded["file_size"] == len(payload)
        part = api.get("/v2/fs/download", params={"path": f"{ROOT}/data.bin"}, headers={"Range": "bytes=0-9"})
        assert part.status_code == 206 and part.content == payload[:10]
        etag = part.headers["etag"]
        v2_data(api.post("/v2/fs/write", json={"path": f"{ROOT}/data.bin", "content": "changed"}))
        changed = api.get(
            "/v2/fs/download",
            params={"path": f"{ROOT}/data.bin", "change_policy": "abort"},
            headers={"If-Match": etag},
        )
        assert changed.status_code == 409 and changed.json()["data"]["retryable"] is True

        tree = api.get("/v2/fs/tree", params={"path": ROOT})
        assert tree.status_code == 200 and tree.headers["content-type"] == "application/x-tar"
        names = set(tarfile.open(fileobj=io.BytesIO(tree.content)).getnames())
        assert {"src", "src/app.py", "data.bin"} <= names
        copy = f"{ROOT}-copy"
        imported = v2_data(api.put("/v2/fs/tree", params={"path": copy}, content=tree.content))
        assert imported["mode"] == "rename" and imported["entries"] == len(names)
        assert v2_data(api.get("/v2/fs/read", params={"path": f"{copy}/src/app.py"}))["content"].startswith(
            "import sys"
        )

        refused = api.put("/v2/fs/tree", params={"path": f"{ROOT}/hostile"}, content=hostile_tar())
        assert refused.status_code == 400 and refused.json()["data"]["error_type"] == "invalid_path"
        for left_out in (f"{ROOT}/hostile", f"{ROOT}/escaped.txt"):
            assert api.get("/v2/fs/stat", params={"path": left_out}).status_code == 404

        for path in (ROOT, copy):
            assert v2_data(api.post("/v2/fs/delete", json={"path": path, "recursive": True}))["path"] == path
        assert api.get("/v2/fs/stat", params={"path": ROOT}).status_code == 404
