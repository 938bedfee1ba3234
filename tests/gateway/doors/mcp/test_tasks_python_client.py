"""The official Python client (2026-07-28) with the tasks extension against a real gateway: a 30 s
command is a task (handle in under a second, output while it runs, cancel kills its process), its
result is read after the creating connection closed, an idempotency key runs a command once,
``call_tool`` resolves a task transparently, and a command at a prompt surfaces as ``input_required``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.client.session import ClientSession

from tests.support.mcp_tasks_client import (
    CancelTask,
    CreatedTask,
    DetailedTask,
    GetTask,
    TaskParams,
    TasksClient,
    UpdateTask,
)
from tests.support.polling import eventually

pytestmark = pytest.mark.anyio

BASH = "sandbox_execute_bash"


async def decline(context: Any, params: Any) -> types.ElicitResult:
    """The client answers elicitation (so tasks may ask it); its answers are sent by the tests."""
    return types.ElicitResult(action="decline")


@asynccontextmanager
async def client(mcp_url: str) -> AsyncIterator[Client]:
    async with Client(mcp_url, extensions=[TasksClient()], elicitation_callback=decline) as connected:
        yield connected


async def start(session: ClientSession, command: str, meta: dict[str, Any] | None = None) -> CreatedTask:
    began = time.monotonic()
    created = await session.call_tool(BASH, {"cmd": command, "timeout": 120}, meta=meta, allow_claimed=True)
    assert isinstance(created, CreatedTask), created
    assert time.monotonic() - began < 1.0 and created.status == "working"
    return created


async def get(session: ClientSession, task_id: str) -> DetailedTask:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), DetailedTask)


async def wait_for(session: ClientSession, task_id: str, predicate: Any, seconds: float = 30) -> DetailedTask:
    """The task once ``predicate`` holds for it, polled as a client would."""
    deadline = time.monotonic() + seconds
    while True:
        task = await get(session, task_id)
        if predicate(task):
            return task
        assert time.monotonic() < deadline, f"task {task_id} is still {task.status}"
        await anyio.sleep(0.1)


def gone(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/task/{pid}/children").read_text().strip()
    except OSError:
        return True


async def test_a_30s_command_shows_its_output_and_cancel_kills_it(mcp_url: str, tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    async with client(mcp_url) as connected:
        created = await start(
            connected.session, f"echo $$ > {marker}; for i in $(seq 30); do echo tick $i; sleep 1; done"
        )
        running = await wait_for(connected.session, created.task_id, lambda t: "tick 2" in t.output)
        assert running.status == "working" and running.result is None
        await connected.session.send_request(CancelTask(params=TaskParams(task_id=created.task_id)), types.Result)
        ended = await wait_for(connected.session, created.task_id, lambda t: t.status != "working")
        assert ended.status == "cancelled"
    shell = int(marker.read_text())
    assert await eventually(lambda: gone(shell), 15)


async def test_the_result_outlives_the_connection_that_made_it(mcp_url: str) -> None:
    async with client(mcp_url) as first:
        created = await start(first.session, "sleep 1; echo made by the task")
    async with client(mcp_url) as second:
        done = await wait_for(second.session, created.task_id, lambda t: t.status == "completed")
    assert done.result is not None and "made by the task" in done.result["content"][0]["text"]


async def test_an_idempotency_key_runs_the_command_once(mcp_url: str, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    meta = {"dev.agentbox/idempotency-key": "py-key-1"}
    async with client(mcp_url) as connected:
        first = await start(connected.session, f"echo once >> {ran}; sleep 1", meta)
        second = await start(connected.session, f"echo once >> {ran}; sleep 1", meta)
        assert second.task_id == first.task_id
        await wait_for(connected.session, first.task_id, lambda t: t.status == "completed")
    assert ran.read_text() == "once\n"


async def test_call_tool_resolves_a_task_transparently(mcp_url: str) -> None:
    async with client(mcp_url) as connected:
        result = await connected.call_tool(BASH, {"cmd": "sleep 1; echo resolved"})
    assert "resolved" in result.content[0].text  # type: ignore[union-attr]


async def answer(session: ClientSession, task_id: str, response: dict[str, Any]) -> None:
    update = UpdateTask(params=TaskParams(task_id=task_id, input_responses={"input": response}))
    await session.send_request(update, types.Result)


async def test_a_command_at_a_prompt_asks_the_client_and_goes_on_with_the_answer(mcp_url: str) -> None:
    command = "printf 'Overwrite the file? [y/N] '; read reply; echo \"answered $reply\""
    async with client(mcp_url) as connected:
        created = await start(connected.session, command)
        asking = await wait_for(connected.session, created.task_id, lambda t: t.status == "input_required")
        assert asking.input_requests is not None
        request = asking.input_requests["input"]
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Overwrite the file? [y/N]"
        await answer(connected.session, created.task_id, {"action": "accept", "content": {"input": "y"}})
        done = await wait_for(connected.session, created.task_id, lambda t: t.status == "completed")
    assert done.result is not None and "answered y" in done.result["content"][0]["text"]


async def test_a_declined_prompt_is_the_end_of_input(mcp_url: str) -> None:
    command = "read reply || echo 'no input'; read again || echo 'still none'"
    async with client(mcp_url) as connected:
        created = await start(connected.session, command)
        await wait_for(connected.session, created.task_id, lambda t: t.status == "input_required")
        await answer(connected.session, created.task_id, {"action": "decline"})
        done = await wait_for(connected.session, created.task_id, lambda t: t.status == "completed")
    assert done.result is not None and "no input" in done.result["content"][0]["text"]
    assert "still none" in done.result["content"][0]["text"]  # stdin stays closed: nobody is asked twice


async def test_without_elicitation_a_prompt_reads_end_of_input(mcp_url: str) -> None:
    async with Client(mcp_url, extensions=[TasksClient()]) as connected:
        result = await connected.call_tool(BASH, {"cmd": "sleep 0.5; read reply || echo 'no input'"})
    assert "no input" in result.content[0].text  # type: ignore[union-attr]
