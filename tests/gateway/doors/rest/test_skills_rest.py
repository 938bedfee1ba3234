"""``/v1/skills/*`` through the agent-sandbox SDK (sync and async): register from an uploaded archive
or a sandbox folder, front matter as metadata, content, delete one, clear; the skills registered
are the ones ``sandbox_load_skill`` then lists. Bad input is a 4xx envelope and changes nothing."""

from __future__ import annotations

import asyncio
import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response_skill_content_result import ResponseSkillContentResult
from agent_sandbox.types.response_skill_metadata_collection import ResponseSkillMetadataCollection
from agent_sandbox.types.response_skill_registration_result import ResponseSkillRegistrationResult

from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.jsonrpc import rpc

SKILL = "---\nname: {name}\ndescription: {description}\nversion: 2\n---\n# {name}\n\nDo the {name} thing.\n"


def skill_text(name: str, description: str = "a test skill") -> str:
    return SKILL.format(name=name, description=description)


def zip_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def tar_of(files: dict[str, str], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, target in (links or {}).items():
            link = tarfile.TarInfo(path)
            link.type, link.linkname = tarfile.SYMTYPE, target
            archive.addfile(link)
        for path, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(path)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=30)


@pytest.fixture
def root(gateway_settings: GatewaySettings) -> Path:
    return gateway_settings.skills_path


def test_register_an_archive_then_read_it_back(client: Sandbox, root: Path, mcp_url: str) -> None:
    archive = zip_of({"SKILL.md": skill_text("pdf-tools"), "scripts/run.sh": "echo hi\n"})
    registered = client.skills.register_skills(file=("skill.zip", archive, "application/zip"))
    assert isinstance(registered, ResponseSkillRegistrationResult)
    assert registered.data.count == 1
    [skill] = registered.data.registered
    assert skill.name == "pdf-tools" and skill.path == str((root / "pdf-tools").resolve())
    assert skill.metadata == {"name": "pdf-tools", "description": "a test skill", "version": 2}
    assert (root / "pdf-tools" / "scripts" / "run.sh").read_text() == "echo hi\n"

    content = client.skills.get_content(name="pdf-tools")
    assert isinstance(content, ResponseSkillContentResult)
    assert content.data.content == "# pdf-tools\n\nDo the pdf-tools thing.\n"
    listed = rpc(mcp_url, "tools/call", {"name": "sandbox_load_skill", "arguments": {}}).json()
    assert "- pdf-tools" in listed["result"]["content"][0]["text"]


def test_register_a_tarball_of_several_and_a_folder(client: Sandbox, root: Path, tmp_path: Path) -> None:
    tarball = tar_of({"pack/alpha/SKILL.md": skill_text("alpha"), "pack/beta/SKILL.md": skill_text("beta")})
    registered = client.skills.register_skills(file=("pack.tar.gz", tarball))
    assert sorted(s.name for s in registered.data.registered) == ["alpha", "beta"]
    folder = tmp_path / "my-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\ndescription: from a folder\n---\nBody\n")
    from_path = client.skills.register_skills(file=("empty", b""), path=str(folder), name="renamed")
    assert from_path.data.registered[0].name == "renamed"
    assert (root / "renamed" / "SKILL.md").is_file() and folder.is_dir()

    collection = client.skills.list_metadata()
    assert isinstance(collection, ResponseSkillMetadataCollection)
    assert [s.name for s in collection.data.skills] == ["alpha", "beta", "renamed"]
    assert collection.data.skills[2].metadata == {"description": "from a folder"}
    assert [s.name for s in client.skills.list_metadata(names="beta,alpha").data.skills] == ["beta", "alpha"]


def test_delete_one_then_clear(client: Sandbox, root: Path) -> None:
    client.skills.register_skills(file=("a.zip", zip_of({"one/SKILL.md": skill_text("one")})))
    client.skills.register_skills(file=("b.zip", zip_of({"two/SKILL.md": skill_text("two")})))
    (root / "notes.txt").write_text("not a skill")
    deleted = client.skills.delete_skill(name="one")
    assert deleted.data.name == "one" and not (root / "one").exists()
    cleared = client.skills.clear_skills()
    assert cleared.data == {"removed": ["two"], "count": 1}
    assert client.skills.list_metadata().data.skills == []
    assert (root / "notes.txt").is_file()


def test_the_async_client_too(gateway: str) -> None:
    async def scenario() -> list[str]:
        client = AsyncSandbox(base_url=gateway, timeout=30)
        await client.skills.register_skills(file=("s.zip", zip_of({"SKILL.md": skill_text("async-skill")})))
        return [s.name for s in (await client.skills.list_metadata()).data.skills]

    assert asyncio.run(scenario()) == ["async-skill"]


@pytest.mark.parametrize(
    ("files", "data", "status"),
    [
        ({"file": ("x.zip", b"not an archive")}, {}, 400),
        ({"file": ("x.zip", zip_of({"README.md": "no skill here"}))}, {}, 400),
        ({"file": ("x.zip", zip_of({"../escape/SKILL.md": skill_text("escape")}))}, {}, 400),
        ({"file": ("x.zip", zip_of({"SKILL.md": "no front matter name"}))}, {}, 400),
        ({"file": ("x.zip", zip_of({"SKILL.md": skill_text("ok")}))}, {"name": "../up"}, 400),
        ({"file": ("x.tgz", tar_of({"SKILL.md": skill_text("out")}, {"etc": "/etc"}))}, {}, 400),
        ({"file": ("empty", b"")}, {"path": "/no/such/folder"}, 404),
        ({"file": ("empty", b"")}, {}, 400),
    ],
)
def test_bad_registrations_change_nothing(gateway: str, root: Path, files: dict, data: dict, status: int) -> None:
    response = shared_http.post(f"{gateway}/v1/skills/register", files=files, data=data, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    assert list(root.iterdir()) == []
    assert not (root.parent / "escape").exists()


def test_unknown_and_invalid_names(client: Sandbox, gateway: str) -> None:
    for call in (
        lambda: client.skills.get_content(name="nope"),
        lambda: client.skills.delete_skill(name="nope"),
        lambda: client.skills.list_metadata(names="nope"),
    ):
        with pytest.raises(ApiError) as missing:
            call()
        assert missing.value.status_code == 404
    assert shared_http.get(f"{gateway}/v1/skills/..%2Fetc/content", timeout=10).status_code in (400, 404)
    assert shared_http.get(f"{gateway}/v1/skills/.hidden/content", timeout=10).status_code == 400
