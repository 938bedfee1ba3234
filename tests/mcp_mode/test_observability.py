"""Operator basics of MCP mode and API mode (issue 20): ``/metrics`` behind each one's token, agent
run counts (started, finished, failed, busy-refused) and tool calls after known traffic, request ids."""

from __future__ import annotations

import anyio
import httpx
import pytest

from tests.support.metrics import Samples, scrape, value

from .helpers import mcp_client, serve_settings

TOKEN = "obs-mcp-token-5e1d"


def runs(found: Samples, event: str) -> float:
    return value(found, "agentbox_agent_runs_total", event=event)


@pytest.mark.anyio
async def test_mcp_mode_metrics_after_runs(make_settings) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serve_settings(make_settings(AICODEBOX_MCP_MODE_TOKEN=TOKEN)) as base:
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{base}/metrics")).status_code == 401
        before = scrape(base, **auth)
        async with mcp_client(f"{base}/mcp", token=TOKEN) as client:
            ok = await client.call_tool("run_prompt", {"prompt": "ANSWER fine"})
            failed = await client.call_tool("run_prompt", {"prompt": "EXIT 3"})
            assert not ok.is_error and failed.is_error

            results = {}

            async def slow() -> None:
                results["slow"] = await client.call_tool("run_prompt", {"prompt": "SLEEP 1.5\nANSWER slow"})

            async with anyio.create_task_group() as group:
                group.start_soon(slow)
                await anyio.sleep(0.5)
                busy = await client.call_tool("run_prompt", {"prompt": "ANSWER never"})
            assert busy.is_error and "busy" in busy.content[0].text
            await client.call_tool("read_file", {"path": "missing.txt"})
        after = scrape(base, **auth)
    assert runs(after, "started") - runs(before, "started") == 3
    assert runs(after, "finished") - runs(before, "finished") == 2
    assert runs(after, "failed") - runs(before, "failed") == 1
    assert runs(after, "busy_refused") - runs(before, "busy_refused") == 1
    assert value(after, "agentbox_agent_runs_active") == 0
    assert value(after, "agentbox_mcp_tool_calls_total", tool="run_prompt", outcome="ok") == 2
    assert value(after, "agentbox_mcp_tool_calls_total", tool="run_prompt", outcome="is_error") == 2
    assert value(after, "agentbox_mcp_tool_calls_total", tool="read_file", outcome="is_error") == 1


def test_mcp_mode_request_id_and_public_healthz(make_settings) -> None:
    with serve_settings(make_settings(AICODEBOX_MCP_MODE_TOKEN=TOKEN)) as base:
        answer = httpx.get(f"{base}/healthz", headers={"x-request-id": "mm-1"})
        assert answer.status_code == 200 and answer.headers["x-request-id"] == "mm-1"
        refused = httpx.post(f"{base}/mcp", json={})
        assert refused.status_code == 401 and len(refused.headers["x-request-id"]) == 32
