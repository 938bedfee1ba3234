"""One workspace lock for the whole API process: while any of ``/run``, the OpenAI endpoint and MCP
``run_prompt`` holds a workspace, the other two are refused at once (409 over HTTP, an error result
over MCP) and start no agent; different workspaces run in parallel; the server stays responsive."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import httpx
import pytest

from tests.mcp_mode.helpers import StandIn, mcp_client, tool_text, wait_gone

from .helpers import serve_api

pytestmark = pytest.mark.anyio

HOLD = "CHILD\nSLEEP 30"


@pytest.fixture
async def base(make_api_settings) -> AsyncIterator[str]:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1")) as url:
        yield url


def chat_body(prompt: str, stream: bool = False) -> dict:
    return {"model": "opus", "messages": [{"role": "user", "content": prompt}], "stream": stream}


WORKSPACE_HEADER = {"x-aicodebox-workspace": "w"}


async def refused_by_run(http: httpx.AsyncClient, base: str, held: Path) -> None:
    answer = await http.post(f"{base}/run", json={"prompt": "ANSWER no", "workspace": "w"})
    assert answer.status_code == 409
    assert answer.json() == {"detail": f"workspace {held} is busy with another run"}


async def refused_by_openai(http: httpx.AsyncClient, base: str, held: Path) -> None:
    answer = await http.post(
        f"{base}/openai/v1/chat/completions", json=chat_body("ANSWER no"), headers=WORKSPACE_HEADER
    )
    assert answer.status_code == 409
    assert answer.json()["detail"] == "workspace busy, retry later"
    assert answer.json()["error"]["message"] == "workspace busy, retry later"


async def refused_by_mcp(http: httpx.AsyncClient, base: str, held: Path) -> None:
    async with mcp_client(f"{base}/mcp/") as client:
        outcome = await client.call_tool("run_prompt", {"prompt": "ANSWER no", "workspace": "w"})
    assert outcome.is_error and tool_text(outcome) == f"workspace {held} is busy with another run"


async def check_refusals(
    base: str, stand_in: StandIn, held: Path, *refusals: Callable[[httpx.AsyncClient, str, Path], object]
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        for refusal in refusals:
            started = time.monotonic()
            await refusal(http, base, held)
            assert time.monotonic() - started < 2  # refused at once, never queued
    assert len(stand_in.calls()) == 1  # no agent was started by a refused request


async def test_run_holds_the_workspace(base: str, stand_in: StandIn, workspace: Path) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        started = await http.post(f"{base}/run", json={"prompt": HOLD, "workspace": "w", "async": True})
        (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        await check_refusals(base, stand_in, workspace / "w", refused_by_openai, refused_by_mcp, refused_by_run)
        await http.delete(f"{base}/run/{started.json()['runId']}")
    await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])


async def test_openai_holds_the_workspace(base: str, stand_in: StandIn, workspace: Path) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        url = f"{base}/openai/v1/chat/completions"
        async with http.stream("POST", url, json=chat_body(HOLD, stream=True), headers=WORKSPACE_HEADER) as response:
            lines = response.aiter_lines()
            assert (await lines.__anext__()).startswith("data: ")
            (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
            await check_refusals(base, stand_in, workspace / "w", refused_by_run, refused_by_mcp)
    await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])


async def test_mcp_holds_the_workspace(base: str, stand_in: StandIn, workspace: Path) -> None:
    async with mcp_client(f"{base}/mcp") as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "run_prompt", {"prompt": HOLD, "workspace": "w"})
            (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
            await check_refusals(base, stand_in, workspace / "w", refused_by_run, refused_by_openai)
            tg.cancel_scope.cancel()  # the MCP client leaves: the agent is killed
    await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])
    async with httpx.AsyncClient(timeout=30) as http:  # and the workspace is free again
        again = await http.post(f"{base}/run", json={"prompt": "ANSWER free", "workspace": "w"})
        assert again.json()["text"] == "free"


async def finished(http: httpx.AsyncClient, base: str, run_id: str) -> dict:
    for _ in range(300):
        result = (await http.get(f"{base}/run/result", params={"runId": run_id})).json()
        if result["status"] != "running":
            return result
        await anyio.sleep(0.05)
    raise AssertionError(f"run {run_id} did not finish")


async def test_different_workspaces_run_in_parallel(base: str, stand_in: StandIn) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        ids = []
        for name in ("a", "b"):
            answer = await http.post(
                f"{base}/run",
                json={"prompt": f"SLEEP 1.5\nANSWER {name}", "workspace": name, "async": True},
            )
            assert answer.status_code == 200
            ids.append(answer.json()["runId"])
        started = time.monotonic()
        await anyio.to_thread.run_sync(stand_in.wait_for_calls, 2)
        assert time.monotonic() - started < 1.5  # the second started while the first was still sleeping
        assert [(await finished(http, base, run_id))["text"] for run_id in ids] == ["a", "b"]


async def test_healthz_stays_fast_during_a_run(base: str, stand_in: StandIn) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        started = await http.post(f"{base}/run", json={"prompt": HOLD, "async": True})
        await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        await http.get(f"{base}/healthz")  # connection warmed up
        timings = []
        for _ in range(10):
            began = time.monotonic()
            health = await http.get(f"{base}/healthz")
            timings.append(time.monotonic() - began)
            assert health.json() == {"ok": True, "adapter": "claude"}
        status = (await http.get(f"{base}/status")).json()
        assert status["runs"][0]["status"] == "running"  # the run was in flight throughout
        assert max(timings) < 0.05, timings
        await http.delete(f"{base}/run/{started.json()['runId']}")
