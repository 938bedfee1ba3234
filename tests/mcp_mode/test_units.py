"""Pieces of MCP mode that are easiest to pin down directly: JSON answer parsing, path resolvers,
the lock registry, adapter loading and the adapters' event folding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentbox_common.settings import ConfigError
from agentbox_common.workspace_files import FileProblem, WorkspaceFiles
from agentbox_mcp_mode.adapters import load_adapter
from agentbox_mcp_mode.adapters.base import Adapter, AgentEvent, AgentRequest
from agentbox_mcp_mode.adapters.claude import ClaudeParser
from agentbox_mcp_mode.locks import WorkspaceBusy, WorkspaceLocks
from agentbox_mcp_mode.run_service import RunSpec
from agentbox_mcp_mode.schemas import parse_json_response
from agentbox_mcp_mode.workspace import Workspace, WorkspaceError

OBJECT = {"type": "object", "required": ["a"]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 2}\n```', {"a": 2}),
        ('first\n```json\n{"a": 3}\n```\nthen\n```\n{"a": 4}\n```\nbye', {"a": 4}),  # last block first
        ('```\n{"b": 0}\n```\nfixed:\n```json\n{"a": 5}\n```\n```\nnot json\n```', {"a": 5}),
        (
            'Result: {"a": "brace } in a string", "n": {"x": [1]}} -- done',
            {"a": "brace } in a string", "n": {"x": [1]}},
        ),
    ],
)
def test_parse_json_candidates(text: str, expected: object) -> None:
    assert parse_json_response(text, OBJECT) == (expected, None)


def test_parse_json_arrays_and_errors() -> None:
    assert parse_json_response("the list: [1, 2, 3].", {"type": "array"}) == ([1, 2, 3], None)
    value, error = parse_json_response('{"b": 1}', OBJECT)
    assert value is None and error == "does not match the schema: 'a' is a required property"
    value, error = parse_json_response("no json here", OBJECT)
    assert value is None and error.startswith("not valid JSON")


def test_workspace_files_walk(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.txt").write_text("x")
    (root / "abs-link").symlink_to(root / "sub")  # absolute, but inside
    (root / "rel-link").symlink_to("sub/../sub/x.txt")
    (root / "loop").symlink_to("loop")
    files = WorkspaceFiles(root)
    for path in ("/sub/x.txt", "sub/./x.txt", "sub/../sub/x.txt", "abs-link/x.txt", "rel-link"):
        assert files.read_bytes(path) == b"x", path
    assert [entry.name for entry in files.list("")] == ["abs-link", "loop", "rel-link", "sub"]
    assert files.list("sub/..") == files.list("/")
    for bad, message in (
        ("..", "path escapes workspace root: '..'"),
        ("../root2/x", "path escapes workspace root: '../root2/x'"),
        ("sub/../../x", "path escapes workspace root: 'sub/../../x'"),
        ("a\x00b", "invalid path: 'a\\x00b'"),
        ("loop", "invalid path: 'loop' (too many levels of symbolic links)"),
        ("sub/x.txt/y", "not found: sub/x.txt/y"),
    ):
        with pytest.raises(FileProblem) as caught:
            files.read_bytes(bad)
        assert str(caught.value) == message
    with pytest.raises(FileProblem, match=r"a parent of sub/x\.txt/y is a file"):
        files.write_text("sub/x.txt/y", "z")


def test_run_directory(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    assert workspace.run_directory("") == tmp_path.resolve()
    created = workspace.run_directory("a/b")
    assert created == tmp_path.resolve() / "a" / "b" and created.is_dir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "out").symlink_to("/")
    for bad in ("../x", "/abs", "a/../b", "file", "out/tmp"):
        with pytest.raises(WorkspaceError):
            workspace.run_directory(bad)


def test_locks() -> None:
    locks = WorkspaceLocks()
    with locks.hold("/w/a"):
        assert locks.busy() == ["/w/a"]
        with pytest.raises(WorkspaceBusy, match="workspace /w/a is busy with another run"):
            locks.acquire("/w/a")
        with locks.hold("/w/b"):
            assert locks.busy() == ["/w/a", "/w/b"]
    with pytest.raises(RuntimeError), locks.hold("/w/a"):
        raise RuntimeError("crash")
    assert locks.busy() == []


class EchoAdapter(Adapter):
    """A custom adapter as a child image would ship one (``AICODEBOX_ADAPTER=module:Class``)."""

    name = "echo"

    async def stream(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        yield AgentEvent("session", session_id="s-1")
        yield AgentEvent("delta", text="he")
        yield AgentEvent("usage", usage={"input_tokens": 2, "model": "x"})
        yield AgentEvent("delta", text="llo")
        yield AgentEvent("usage", usage={"input_tokens": 3, "model": "y"})
        yield AgentEvent("stop", reason="stop")


@pytest.mark.anyio
async def test_custom_adapter_and_event_folding(make_settings, tmp_path: Path) -> None:
    adapter = load_adapter(make_settings(AICODEBOX_ADAPTER="tests.mcp_mode.test_units:EchoAdapter"))
    assert adapter.name == "echo"
    result = await adapter.run(AgentRequest(prompt="x", cwd=tmp_path))
    assert (result.text, result.session_id, result.exit_code) == ("hello", "s-1", 0)
    assert result.usage == {"input_tokens": 5, "model": "x"}


@pytest.mark.parametrize(
    "value",
    [
        "nosuch",
        "tests.mcp_mode.nosuch:X",
        "tests.mcp_mode.test_units:Nope",
        "tests.mcp_mode.test_units:OBJECT",
    ],
)
def test_bad_adapter_is_a_config_error(make_settings, value: str) -> None:
    with pytest.raises(ConfigError, match="AICODEBOX_ADAPTER"):
        load_adapter(make_settings(AICODEBOX_ADAPTER=value))


def test_claude_structured_output_is_the_answer() -> None:
    parser = ClaudeParser()
    events = parser.feed(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "see JSON",
            "structured_output": {"a": 1},
            "session_id": "s",
            "usage": {"output_tokens": 1},
        }
    )
    assert [e.type for e in events] == ["session", "usage"]
    assert parser.final_text == '{"a": 1}' and parser.error == ""


def test_a_run_specs_agent_options_reach_the_request() -> None:
    """The options a run's spec and an adapter's request share are declared once and passed whole."""
    shared = {
        "model": "m",
        "system_prompt": "s",
        "append_system_prompt": "a",
        "resume": "r",
        "thinking": "high",
        "json_schema": {"type": "object"},
    }
    spec = RunSpec(prompt="p", workspace=None, no_continue=True, **shared)
    assert spec.options() == shared
    assert AgentRequest(prompt="p", cwd=Path("/"), **spec.options()) == AgentRequest(
        prompt="p", cwd=Path("/"), **shared
    )
    assert (RunSpec(prompt="p").no_continue, AgentRequest(prompt="p", cwd=Path("/")).no_continue) == (False, True)
