"""Long tool calls over the gateway's ``/mcp``: progress notifications carrying the output as it is
printed, cancellation killing the command, and ``logging/setLevel`` — with the official SDK client
in both protocol eras."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.gateway.planes.shell.test_shell_plane import eventually, live_processes, sleep_token
from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "auto"]  # handshake era (2025-11-25) and the stateless 2026-07-28 revision


class Progress:
    """A ``progress_callback`` that keeps what arrived and when."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.events: list[tuple[float, float, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.events.append((time.monotonic() - self.started, progress, message))

    @property
    def text(self) -> str:
        return "".join(message or "" for _, _, message in self.events)

    def arrival(self, text: str) -> float:
        """When the messages so far first held ``text`` (one write may come as several chunks)."""
        seen = ""
        for at, _, message in self.events:
            seen += message or ""
            if text in seen:
                return at
        raise AssertionError(f"{text!r} never arrived in {seen!r}")


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    return json.loads(result.content[0].text)


@pytest.mark.parametrize("mode", ERAS)
async def test_output_arrives_while_the_command_runs(mcp_url: str, mode: str) -> None:
    progress = Progress()
    async with Client(mcp_url, mode=mode) as client:
        result = await client.call_tool(
            "sandbox_execute_bash", {"cmd": "echo first; sleep 1.5; echo last"}, progress_callback=progress
        )
    finished = time.monotonic() - progress.started
    assert payload(result)["output"] == "first\nlast\n"
    assert progress.text == "first\nlast\n"
    first_at, _, first = progress.events[0]
    assert first == "first\n" and first_at < finished - 1.0  # long before the command ended
    values = [value for _, value, _ in progress.events]
    assert values == sorted(values) and len(set(values)) == len(values)


@pytest.mark.parametrize("mode", ERAS)
async def test_the_final_result_keeps_the_whole_output(mcp_url: str, mode: str) -> None:
    progress = Progress()
    command = "for i in $(seq 1 2000); do echo line-$i; done"
    async with Client(mcp_url, mode=mode) as client:
        result = await client.call_tool("sandbox_execute_bash", {"cmd": command}, progress_callback=progress)
    expected = "".join(f"line-{i}\n" for i in range(1, 2001))
    assert payload(result)["output"] == expected
    assert progress.text == expected


async def cancel_once(
    client: Client, tool: str, arguments: dict[str, Any], progress: Progress, *running: Callable[[], object]
) -> None:
    """Call ``tool`` and cancel the call, as a client giving up on it does, once every ``running``
    condition held (each within 10 s; 30 s in all)."""
    with anyio.move_on_after(30):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await client.call_tool(tool, arguments, progress_callback=progress)

            tg.start_soon(call)
            for condition in running:
                assert await eventually(condition, 10)
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("mode", ERAS)
async def test_cancelling_kills_the_command_and_its_children(mcp_url: str, mode: str) -> None:
    token = sleep_token()
    progress = Progress()
    async with Client(mcp_url, mode=mode) as client:
        await cancel_once(
            client,
            "sandbox_execute_bash",
            {"cmd": f"echo started; sleep {token} & sleep {token}; echo never", "timeout": 300},
            progress,
            lambda: len(live_processes(f"sleep {token}")) == 2,
            lambda: progress.text,
        )
        assert await eventually(lambda: not live_processes(f"sleep {token}"), 5), live_processes(f"sleep {token}")
        after = payload(await client.call_tool("sandbox_execute_bash", {"cmd": "echo next"}))
    # (bash may report the killed background job first, as after any kill)
    assert after["output"].endswith("next\n") and after["exit_code"] == 0
    assert progress.text.startswith("started")


def test_notifications_cancelled_kills_a_call_without_progress(mcp_url: str) -> None:
    """The hot-path JSON answer: the cancel arrives as its own POST and names the request id."""
    token = sleep_token()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(
            call_tool, mcp_url, "sandbox_execute_bash", {"cmd": f"sleep {token}", "timeout": 300}, id=77
        )
        deadline = time.monotonic() + 10
        while not live_processes(f"sleep {token}") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert live_processes(f"sleep {token}")
        answer = shared_http.post(
            mcp_url,
            json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 77, "reason": "test"}},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert answer.status_code == 202
        result = future.result(timeout=10)
    assert result["isError"] is True
    assert not live_processes(f"sleep {token}")
    assert tool_json(call_tool(mcp_url, "sandbox_execute_bash", {"cmd": "echo ok"}))["output"] == "ok\n"


async def test_logging_capability_and_set_level(mcp_url: str) -> None:
    async with Client(mcp_url, mode="legacy") as client:
        assert client.server_capabilities.logging is not None
        await client.set_logging_level("warning")


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(
    ("language", "code"),
    [
        ("python", "import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('last')"),
        ("javascript", "console.log('first'); setTimeout(() => console.log('last'), 2000);"),
    ],
)
async def test_code_output_arrives_while_it_runs(mcp_url: str, mode: str, language: str, code: str) -> None:
    progress = Progress()
    async with Client(mcp_url, mode=mode) as client:
        result = await client.call_tool(
            "sandbox_execute_code", {"language": language, "code": code}, progress_callback=progress
        )
    finished = time.monotonic() - progress.started
    assert not result.is_error, result
    assert result.content[0].text == "first\nlast\n"
    assert progress.text == "first\nlast\n"
    assert progress.arrival("first\n") < finished - 1.0 and "last" not in progress.events[0][2]


@pytest.mark.parametrize("mode", ERAS)
async def test_cancelling_code_stops_its_interpreter_work(mcp_url: str, mode: str) -> None:
    """A cancelled ``sandbox_execute_code`` stops what the code started, and the next call works."""
    token = sleep_token()
    code = f"import subprocess, time\nprint('started', flush=True)\nsubprocess.run(['sleep', '{token}'])\n"
    progress = Progress()
    async with Client(mcp_url, mode=mode) as client:
        await cancel_once(
            client,
            "sandbox_execute_code",
            {"code": code, "timeout": 300},
            progress,
            lambda: len(live_processes(f"sleep {token}")) == 1,
        )
        assert await eventually(lambda: not live_processes(f"sleep {token}"), 5), live_processes(f"sleep {token}")
        after = await client.call_tool("sandbox_execute_code", {"code": "print(6 * 7)"})
    assert not after.is_error and "42" in after.content[0].text
