"""API mode's global cap on agent runs (``/run``, the OpenAI endpoint and ``/mcp/`` share it) and
its ``/mcp/`` for a client that sends no ``Accept`` header."""

from __future__ import annotations

import httpx

from tests.mcp_mode.helpers import StandIn, mcp_post, sse_json
from tests.mcp_mode.test_hardening import post_without_accept

from .helpers import serve_api

LIMIT_MESSAGE = "too many agent runs at once: the limit is 1 (AICODEBOX_MAX_CONCURRENT_RUNS); retry later"


def test_runs_are_capped_across_workspaces_and_surfaces(make_api_settings, stand_in: StandIn) -> None:
    settings = make_api_settings(AICODEBOX_MAX_CONCURRENT_RUNS="1", AICODEBOX_MCP_MODE="1")
    with serve_api(settings) as base:
        first = httpx.post(f"{base}/run", json={"prompt": "SLEEP 20", "workspace": "a", "async": True})
        stand_in.wait_for_calls(1)
        refused = httpx.post(f"{base}/run", json={"prompt": "ANSWER b", "workspace": "b"}, timeout=10)
        assert (refused.status_code, refused.json()) == (429, {"detail": LIMIT_MESSAGE})
        chat = httpx.post(
            f"{base}/openai/v1/chat/completions",
            json={"model": "sonnet", "messages": [{"role": "user", "content": "ANSWER c"}]},
            timeout=10,
        )
        assert chat.status_code == 429 and chat.json()["error"]["message"] == LIMIT_MESSAGE
        call = {"name": "run_prompt", "arguments": {"prompt": "ANSWER d", "workspace": "d"}}
        tool = sse_json(mcp_post(f"{base}/mcp/", "tools/call", call))["result"]
        assert tool["isError"] and tool["content"][0]["text"] == LIMIT_MESSAGE
        assert len(stand_in.calls()) == 1  # no refused run started an agent
        assert httpx.delete(f"{base}/run/{first.json()['runId']}", timeout=20).status_code == 200
        after = httpx.post(f"{base}/run", json={"prompt": "ANSWER b", "workspace": "b"}, timeout=30)
        assert after.status_code == 200 and after.json()["text"] == "b"


def test_mcp_mount_takes_a_request_without_accept(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_MCP_MODE="1")) as base:
        for path in ("/mcp", "/mcp/"):
            status, text = post_without_accept(base + path)
            assert status == 200 and '"run_prompt"' in text, text
