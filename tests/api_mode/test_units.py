"""Units of API mode: the run registry's bookkeeping and the OpenAI request mapping."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentbox_mcp_mode.api_mode.openai_format import RequestProblem, flatten_messages, parse_headers, resolve_model
from agentbox_mcp_mode.api_mode.runs import RunRegistry
from agentbox_mcp_mode.locks import WorkspaceBusy, WorkspaceLocks


@pytest.mark.anyio
async def test_registry_releases_the_workspace_however_a_run_ends(tmp_path: Path) -> None:
    locks = WorkspaceLocks()
    registry = RunRegistry(locks, result_ttl=0.2)

    async def answer() -> dict:
        return {"text": "ok"}

    async def boom() -> dict:
        raise RuntimeError("broken")

    never = registry.start(tmp_path, answer, keep_result=True)
    with pytest.raises(WorkspaceBusy):
        registry.start(tmp_path, answer, keep_result=True)
    never.task.cancel()  # cancelled before it ever ran
    await asyncio.wait({never.task})
    await asyncio.sleep(0)
    assert locks.busy() == [] and never.status == "cancelled"

    failed = registry.start(tmp_path, boom, keep_result=True)
    await asyncio.wait({failed.task})
    await asyncio.sleep(0)
    assert (failed.status, failed.error) == ("failed", "RuntimeError: broken") and locks.busy() == []

    done = registry.start(tmp_path, answer, keep_result=True)
    await asyncio.wait({done.task})
    await asyncio.sleep(0)
    assert registry.get(done.run_id).public()["text"] == "ok"
    await asyncio.sleep(0.3)
    assert registry.get(done.run_id) is None  # unread results expire

    forgotten = registry.start(tmp_path, answer, keep_result=False)
    await asyncio.wait({forgotten.task})
    await asyncio.sleep(0)
    assert registry.get(forgotten.run_id) is None and forgotten.status == "completed"


def test_model_resolution() -> None:
    models = ("sonnet", "org/local-model")
    assert resolve_model("sonnet", "claude", models) == "sonnet"
    assert resolve_model("anthropic/sonnet", "claude", models) == "sonnet"
    assert resolve_model("org/local-model", "claude", models) == "org/local-model"
    assert resolve_model("claude", "claude", models) == ""
    assert resolve_model("", "claude", models) == ""
    with pytest.raises(RequestProblem) as refused:
        resolve_model("local-model-2", "claude", models)
    assert refused.value.status == 404


def test_messages_and_headers() -> None:
    assert flatten_messages([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]) == ("Hi", "S")
    for bad in ([{"role": "assistant", "content": "x"}], [{"role": "robot", "content": "x"}], [{"content": "x"}]):
        with pytest.raises(RequestProblem):
            flatten_messages(bad)
    utf8 = "Réponds en français".encode().decode("latin-1")  # how a server sees UTF-8 header bytes
    options = parse_headers({"x-claude-append-system-prompt": utf8, "x-claude-continue": "TRUE"})
    assert options.append_system_prompt == "Réponds en français" and options.continue_session
    assert options.workspace is None and parse_headers({"x-aicodebox-workspace": "a/b"}).workspace == "a/b"
