"""``GET``/``PUT /v2/fs/tree``: a directory as one tar stream both ways, as AIO's documentation
describes it (basic/file.mdx, "Transfer"), driven with httpx and archives built with ``tarfile``
against a real gateway on 127.0.0.1. Hostile archives must be refused with nothing written outside
the target (and nothing at all: one bad member refuses the whole archive)."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app


@pytest.fixture(scope="module")
def client(module_gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=module_gateway, timeout=60) as http:
        yield http


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root``: file bytes, link targets, directories (links not followed)."""
    found: dict[str, object] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(directory) / name
            relative = str(full.relative_to(root))
            if full.is_symlink():
                found[relative] = ("link", os.readlink(full))
            elif full.is_dir():
                found[relative] = "dir"
            else:
                found[relative] = full.read_bytes()
    return found


def make_tree(root: Path, files: int) -> None:
    for index in range(files):
        target = root / f"d{index % 10}" / f"sub{index % 3}" / f"file{index}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f"file {index}\n".encode() * (index % 7 + 1))
    (root / "empty").mkdir()
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "d0" / "to-sibling").symlink_to("../d1/sub0")


def put(client: httpx.Client, path: Path, body: bytes) -> httpx.Response:
    return client.put("/v2/fs/tree", params={"path": str(path)}, content=body)


def test_round_trip_of_a_thousand_files(client: httpx.Client, tmp_path: Path) -> None:
    source = tmp_path / "source"
    make_tree(source, 1000)
    response = client.get("/v2/fs/tree", params={"path": str(source)})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/x-tar"
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:") as archive:
        names = archive.getnames()
    assert len([n for n in names if n.endswith(".txt")]) == 1000
    assert "empty" in names and "d0/to-sibling" in names and not any(n.startswith(("/", "..")) for n in names)

    copy = tmp_path / "copy"
    landed = put(client, copy, response.content)
    assert landed.status_code == 200, landed.text
    result = landed.json()["data"]
    assert result["mode"] == "rename" and result["path"] == str(copy)
    assert result["entries"] == len(names)
    assert snapshot(copy) == snapshot(source)
    assert os.access(copy / "run.sh", os.X_OK)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".aiod-")]  # no staging left

    # onto an existing directory: entries are overlaid, what the archive does not name stays
    (copy / "local-only.txt").write_text("mine")
    (copy / "d3" / "sub0" / "file3.txt").write_text("edited")
    merged = put(client, copy, response.content)
    assert merged.json()["data"]["mode"] == "merge"
    assert (copy / "local-only.txt").read_text() == "mine"
    assert (copy / "d3" / "sub0" / "file3.txt").read_bytes() == (source / "d3" / "sub0" / "file3.txt").read_bytes()


def test_a_tar_made_by_tar_and_streamed_without_a_length(client: httpx.Client, tmp_path: Path) -> None:
    """``tar -C dir -cf - .`` names members ``./x``; a chunked body with no Content-Length."""
    source = tmp_path / "src"
    make_tree(source, 20)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(source, arcname=".")
    packed = buffer.getvalue()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(packed), 1000):
            yield packed[start : start + 1000]

    response = client.put("/v2/fs/tree", params={"path": str(tmp_path / "dest")}, content=chunks())
    assert response.status_code == 200, response.text
    assert snapshot(tmp_path / "dest") == snapshot(source)


def member(
    name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"x", linkname: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def archive_of(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


HOSTILE = {
    "dot-dot": [member("ok.txt"), member("../escaped.txt")],
    "nested-dot-dot": [member("a/../../escaped.txt")],
    "absolute": [member("ok.txt"), member("{outside}/escaped.txt")],
    "symlink-out": [member("link", tarfile.SYMTYPE, linkname="../outside")],
    "symlink-absolute": [member("link", tarfile.SYMTYPE, linkname="{outside}")],
    "write-through-link": [
        member("link", tarfile.SYMTYPE, linkname="sub"),
        member("sub/", tarfile.DIRTYPE),
        member("link/x.txt"),
    ],
    "chained-links": [
        member("a", tarfile.SYMTYPE, linkname="b/.."),
        member("b", tarfile.SYMTYPE, linkname="."),
    ],
    "hard-link-out": [member("hard", tarfile.LNKTYPE, linkname="{outside}/secret.txt")],
    "device": [member("ok.txt"), member("null", tarfile.CHRTYPE)],
    "block-device": [member("disk", tarfile.BLKTYPE)],
    "fifo": [member("pipe", tarfile.FIFOTYPE)],
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archives_are_refused_and_write_nothing(client: httpx.Client, tmp_path: Path, case: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "target"
    members = []
    for info, data in HOSTILE[case]:
        info.name = info.name.replace("{outside}", str(outside))
        info.linkname = info.linkname.replace("{outside}", str(outside))
        members.append((info, data))
    before = snapshot(tmp_path)

    response = put(client, target, archive_of(*members))
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["success"] is False
    error = body["data"]
    assert error["error_type"] in {"invalid_path", "invalid_target"} and error["operation"] == "import"
    assert error["path"] == str(target) and "archive member" in error["message"]
    assert snapshot(tmp_path) == before  # nothing written anywhere: not outside, not the target
    assert not target.exists()


def test_hostile_archive_into_an_existing_directory_changes_nothing(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "existing"
    target.mkdir()
    (target / "kept.txt").write_text("kept")
    before = snapshot(tmp_path)
    response = put(client, target, archive_of(member("new.txt"), member("../escaped.txt")))
    assert response.status_code == 400
    assert snapshot(tmp_path) == before


def test_merge_never_follows_a_link_in_the_destination(client: httpx.Client, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "existing"
    target.mkdir()
    (target / "conf").symlink_to(outside)  # the destination's own link, pointing out
    response = put(
        client, target, archive_of(member("conf/", tarfile.DIRTYPE), member("conf/settings.txt", data=b"new"))
    )
    assert response.status_code == 200, response.text
    assert list(outside.iterdir()) == []  # the link was replaced by the archive's directory
    assert (target / "conf").is_dir() and not (target / "conf").is_symlink()
    assert (target / "conf" / "settings.txt").read_bytes() == b"new"


def test_not_a_tar_and_wrong_targets(client: httpx.Client, tmp_path: Path) -> None:
    garbage = put(client, tmp_path / "t", b"this is not a tar archive" * 100)
    assert garbage.status_code == 400 and garbage.json()["data"]["error_type"] == "bad_request"
    assert not (tmp_path / "t").exists()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    onto_file = put(client, a_file, archive_of(member("x.txt")))
    assert onto_file.status_code == 400 and onto_file.json()["data"]["errno_name"] == "ENOTDIR"
    assert a_file.read_text() == "x"

    missing = client.get("/v2/fs/tree", params={"path": str(tmp_path / "missing")})
    assert missing.status_code == 404 and missing.json()["data"]["errno_name"] == "ENOENT"
    not_dir = client.get("/v2/fs/tree", params={"path": str(a_file)})
    assert not_dir.status_code == 400 and not_dir.json()["data"]["error_type"] == "invalid_path"


@pytest.fixture
def small_limits(gateway_settings: GatewaySettings) -> Iterator[str]:
    settings = replace(gateway_settings, fs_tree_max_entries=10, fs_tree_max_bytes=64 * 1024)
    with serve_app(build_app(settings)) as url:
        yield url


def test_entry_and_size_limits_are_settings(small_limits: str, tmp_path: Path) -> None:
    many = archive_of(*(member(f"f{i}.txt") for i in range(11)))
    refused = httpx.put(f"{small_limits}/v2/fs/tree", params={"path": str(tmp_path / "many")}, content=many)
    assert refused.status_code == 413 and "more than 10 entries" in refused.json()["message"]
    assert not (tmp_path / "many").exists()

    big = archive_of(member("big.bin", data=b"\0" * 60_000), member("big2.bin", data=b"\0" * 60_000))
    refused = httpx.put(f"{small_limits}/v2/fs/tree", params={"path": str(tmp_path / "big")}, content=big)
    assert refused.status_code == 413 and refused.json()["data"]["error_type"] == "too_large"
    assert not (tmp_path / "big").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".aiod-")]  # no staging left behind

    source = tmp_path / "eleven"
    source.mkdir()
    for index in range(11):
        (source / f"f{index}").write_text("x")
    exported = httpx.get(f"{small_limits}/v2/fs/tree", params={"path": str(source)})
    assert exported.status_code == 413 and exported.json()["data"]["operation"] == "export"
    fits = archive_of(*(member(f"f{i}.txt") for i in range(10)))
    assert (
        httpx.put(f"{small_limits}/v2/fs/tree", params={"path": str(tmp_path / "ok")}, content=fits).status_code == 200
    )
