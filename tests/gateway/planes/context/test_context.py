"""The context plane: environment facts, packages, skills, capabilities; and their MCP tools."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from agentbox_common.errors import ErrorKind, PlaneError
from agentbox_gateway import __version__
from agentbox_gateway.planes.context import (
    ContextError,
    ContextPlane,
    InvalidSkill,
    ListingToolUnavailable,
    SkillNotFound,
)
from agentbox_gateway.planes.egress import ProxyEntryNotFound, ProxySettingError, ProxyUnavailable
from agentbox_gateway.planes.hooks import HookError, HookNotFound
from agentbox_gateway.planes.preview import AppTimeout, AppUnreachable, PreviewError
from agentbox_gateway.settings import GatewaySettings
from agentbox_gateway.upstreams.client import UpstreamRpcError, UpstreamTimeout, UpstreamUnavailable
from tests.support import shared_http
from tests.support.jsonrpc import call_tool, list_tool_names, rpc, tool_json, tool_text

pytestmark = pytest.mark.anyio


def _skills(root: Path) -> None:
    (root / "pdf").mkdir()
    (root / "pdf" / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: >\n  Extract text and tables\n  from PDF files.\n---\n# PDF\n\nUse pdftotext.\n"
    )
    (root / "web").mkdir()
    (root / "web" / "SKILL.md").write_text("# Web research\n\nSearch the web, then\nsummarise the pages.\n\nMore.\n")
    (root / "empty-folder").mkdir()  # no SKILL.md: not a skill
    (root / ".cache").mkdir()


@pytest.fixture
def context(tmp_path: Path) -> ContextPlane:
    skills = tmp_path / "skills"
    skills.mkdir()
    _skills(skills)
    return ContextPlane(replace(GatewaySettings.from_env({}), skills_path=skills))


async def test_context_fields(context: ContextPlane, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AICODEBOX_WORKSPACE", str(tmp_path))
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        snapshot = await context.get_context()
    assert snapshot.version == __version__
    assert snapshot.home_dir == os.path.expanduser("~")  # noqa: ASYNC240
    assert snapshot.arch == platform.machine() and snapshot.os == platform.system()
    assert snapshot.user and snapshot.timezone and snapshot.os_version
    assert port in snapshot.occupied_ports
    assert snapshot.workspace == str(tmp_path)
    python = shutil.which("python3")
    if python:
        [spec] = [s for s in snapshot.runtimes["python"] if "python3" in s["alias"]]
        assert spec["bin"] == python and re.fullmatch(r"3\.\d+\.\d+", spec["ver"])
    if shutil.which("bash"):
        assert "bash" in [t["name"] for c in snapshot.utils for t in c["tools"]]
    summary = snapshot.summary()
    assert "Occupied ports: " in summary and port in summary and f"Workspace: {tmp_path}" in summary


async def test_no_workspace_when_folder_is_missing(context: ContextPlane, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICODEBOX_WORKSPACE", "/nonexistent/workspace")
    snapshot = await context.get_context()
    assert snapshot.workspace is None and "workspace" not in snapshot.system()


@pytest.mark.skipif(shutil.which("python3") is None, reason="no python3 on PATH")
async def test_python_packages(context: ContextPlane) -> None:
    text = await context.packages_text("python")
    lines = text.splitlines()
    assert lines and all(re.fullmatch(r"[A-Za-z0-9._-]+==\S+", line) for line in lines), lines[:5]
    [listing] = await context.get_packages("py")
    assert len(listing.packages) == len(lines)


def _global_npm_folders() -> set[str]:
    """What ``npm ls -g`` should report, read independently from npm's global folder."""
    run = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, check=True)
    root = Path(run.stdout.strip())
    installed: set[str] = set()
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name.startswith("@"):
            installed.update(f"{entry.name}/{child.name}" for child in entry.iterdir())
        elif not entry.name.startswith("."):
            installed.add(entry.name)
    return installed


async def test_nodejs_packages_or_clear_error(context: ContextPlane) -> None:
    if shutil.which("npm") is None:
        with pytest.raises(ContextError, match="npm is not installed"):
            await context.get_packages("nodejs")
        return
    [listing] = await context.get_packages("nodejs")
    assert {p["name"] for p in listing.packages} == _global_npm_folders()
    assert all(p["version"] for p in listing.packages)


async def test_unknown_language(context: ContextPlane) -> None:
    with pytest.raises(ContextError, match="Unsupported language: cobol"):
        await context.get_packages("cobol")


async def test_skill_listing(context: ContextPlane) -> None:
    assert await context.load_skill(None) == (
        "Skills Count: 2\n"
        "- pdf\n  Extract text and tables from PDF files.\n"
        "- web\n  Search the web, then summarise the pages."
    )


async def test_skill_loading(context: ContextPlane) -> None:
    text = await context.load_skill("pdf")
    assert text == f"Base Path: {context.settings.skills_path / 'pdf'}\n\n# PDF\n\nUse pdftotext.\n"


async def test_unknown_and_traversing_skill_names(context: ContextPlane, tmp_path: Path) -> None:
    with pytest.raises(SkillNotFound, match=r"^Skill not found: nope$"):
        await context.load_skill("nope")
    with pytest.raises(SkillNotFound):
        await context.load_skill("empty-folder")
    (tmp_path / "SKILL.md").write_text("outside the skills folder")  # what ".." would reach
    for name in ("..", "../skills/pdf", "pdf/../web", "/etc", ".cache", "pdf\\..\\.."):
        with pytest.raises(ContextError, match=r"^Invalid skill name"):
            await context.load_skill(name)


async def test_missing_skills_folder(tmp_path: Path) -> None:
    plane = ContextPlane(replace(GatewaySettings.from_env({}), skills_path=tmp_path / "absent"))
    assert await plane.load_skill() == "Skills Count: 0"


async def test_capabilities_cached_and_guarded(context: ContextPlane) -> None:
    calls = 0

    async def broken() -> dict:
        nonlocal calls
        calls += 1
        raise RuntimeError("no browser program")

    report = await context.capabilities(broken)
    assert report["browser"]["status"] == "absent" and "no browser program" in report["browser"]["error"]
    assert report["files"]["read"] is True
    assert report["exec"]["available"] is (shutil.which("bash") is not None)
    assert report["code_interpreter"]["python"] is (shutil.which("python3") is not None)
    await context.capabilities(broken)
    assert calls == 1  # cached
    await context.capabilities(broken, refresh=True)
    assert calls == 2


def test_context_tools_over_mcp(mcp_url: str, gateway_settings: GatewaySettings) -> None:
    names = list_tool_names(mcp_url)
    position = names.index("sandbox_str_replace_editor")
    assert names[position + 1 : position + 4] == [
        "sandbox_get_context",
        "sandbox_get_packages",
        "sandbox_load_skill",
    ]
    tools = {t["name"]: t for t in rpc(mcp_url, "tools/list").json()["result"]["tools"]}
    assert tools["sandbox_get_packages"]["inputSchema"]["properties"]["language"]["enum"] == ["python", "nodejs"]

    info = tool_json(call_tool(mcp_url, "sandbox_get_context"))
    assert info["version"] == __version__ and info["home_dir"] == os.path.expanduser("~")
    assert {"user", "os", "runtimes", "occupied_ports", "info"} <= set(info)
    gateway_port = mcp_url.rsplit(":", 1)[1].split("/")[0]
    assert gateway_port in info["occupied_ports"]

    _skills(gateway_settings.skills_path)
    listing = call_tool(mcp_url, "sandbox_load_skill", {})
    assert tool_text(listing).startswith("Skills Count: 2\n- pdf\n")
    loaded = call_tool(mcp_url, "sandbox_load_skill", {"name": "web"})
    assert tool_text(loaded).startswith(f"Base Path: {gateway_settings.skills_path / 'web'}\n\n# Web research")
    unknown = call_tool(mcp_url, "sandbox_load_skill", {"name": "ghost"})
    assert unknown["isError"] is True and tool_text(unknown) == "Skill not found: ghost"
    traversal = call_tool(mcp_url, "sandbox_load_skill", {"name": "../../etc"})
    assert traversal["isError"] is True and tool_text(traversal).startswith("Invalid skill name")

    bad_language = call_tool(mcp_url, "sandbox_get_packages", {"language": "cobol"})
    assert bad_language["isError"] is True and "language" in tool_text(bad_language)
    if shutil.which("python3"):
        packages = call_tool(mcp_url, "sandbox_get_packages", {"language": "python"})
        assert packages["isError"] is False and "==" in tool_text(packages)


def test_a_missing_package_manager_is_503_over_rest_and_an_error_over_mcp(
    gateway: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # the sandbox's PATH, read per request: no npm, no python3
    for language, program in (("nodejs", "npm"), ("python", "python3")):
        response = shared_http.get(f"{gateway}/v1/sandbox/packages/{language}", timeout=30)
        assert response.status_code == 503, response.text
        assert response.json() == {
            "success": False,
            "message": f"{program} is not installed in this sandbox",
            "data": None,
            "hint": None,
        }
        result = call_tool(f"{gateway}/mcp", "sandbox_get_packages", {"language": language})
        assert result["isError"] is True and tool_text(result) == f"{program} is not installed in this sandbox"


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ContextError, ErrorKind.INVALID),
        (ListingToolUnavailable, ErrorKind.UNAVAILABLE),
        (SkillNotFound, ErrorKind.NOT_FOUND),
        (InvalidSkill, ErrorKind.INVALID),
        (HookError, ErrorKind.INVALID),
        (HookNotFound, ErrorKind.NOT_FOUND),
        (PreviewError, ErrorKind.INVALID),
        (AppUnreachable, ErrorKind.UNAVAILABLE),
        (AppTimeout, ErrorKind.TIMEOUT),
        (ProxySettingError, ErrorKind.INVALID),
        (ProxyEntryNotFound, ErrorKind.NOT_FOUND),
        (ProxyUnavailable, ErrorKind.UNAVAILABLE),
        (UpstreamUnavailable, ErrorKind.UNAVAILABLE),
        (UpstreamTimeout, ErrorKind.TIMEOUT),
        (UpstreamRpcError, ErrorKind.INVALID),
    ],
)
def test_errors_are_plane_errors_of_one_kind(error: type[PlaneError], kind: ErrorKind) -> None:
    """The doors answer these by kind alone (one REST handler, one MCP catch)."""
    assert issubclass(error, PlaneError) and error.kind is kind
