"""``run_prompt`` while the agent works, with the official SDK client and the stand-in agent: its
answer as progress notifications in both protocol eras, and its events as log messages once a
level is set."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .helpers import mcp_client, serve_settings, tool_text

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_answer_streams_while_the_agent_runs(make_settings, mode: str) -> None:
    started = time.monotonic()
    progress: list[tuple[float, float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((time.monotonic() - started, value, message))

    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp", mode=mode) as client:
            outcome = await client.call_tool(
                "run_prompt",
                {"prompt": "FIRST working on it\nSLEEP 1.5\nANSWER all done"},
                progress_callback=on_progress,
            )
    finished = time.monotonic() - started
    assert not outcome.is_error, tool_text(outcome)
    assert tool_text(outcome) == "all done"
    assert [message for _, _, message in progress] == ["working on it", "all done"]
    assert progress[0][0] < finished - 1.0
    assert [value for _, value, _ in progress] == [13, 21]


async def test_agent_events_are_logged_at_the_level_set(make_settings) -> None:
    logged: list[Any] = []

    async def on_log(params: Any) -> None:
        logged.append((params.level, params.logger, params.data))

    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp", mode="legacy", logging_callback=on_log) as client:
            assert client.server_capabilities.logging is not None
            await client.call_tool("run_prompt", {"prompt": "ANSWER quiet"})
            assert logged == []  # no level set: nothing is sent
            await client.set_logging_level("info")
            await client.call_tool("run_prompt", {"prompt": "ANSWER loud"})
            events = [data["event"] for _, _, data in logged]
            assert events[0] == "session" and events[-1] == "stop" and "usage" in events
            assert {level for level, _, _ in logged} == {"info"} and {name for _, name, _ in logged} == {"agent"}
            logged.clear()
            await client.set_logging_level("warning")
            await client.call_tool("run_prompt", {"prompt": "EXIT 3"})
    assert [(level, data["event"], data["exit_code"]) for level, _, data in logged] == [("warning", "stop", 3)]
    assert "failed on purpose" in logged[0][2]["stderr"]
