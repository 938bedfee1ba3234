"""``POST /v1/shell/exec`` with ``Accept: text/event-stream`` through a real gateway, read with
httpx streaming: output events while the command runs, the JSON answer as the last event, offsets
that agree with ``/v1/bash/output``, a client leaving mid-stream, a gigabyte in bounded memory; and
the shell plane's stream holding a command back for a slow reader."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentbox_gateway.planes.shell import OUTPUT_LIMIT, ShellPlane
from agentbox_gateway.planes.shell.output import STREAM_KEEP
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.planes.shell.test_shell_plane import live_processes, sleep_token
from tests.support import shared_http
from tests.support.sse import sse_events

SSE = {"Accept": "text/event-stream"}


def stream_exec(gateway: str, body: dict[str, Any]) -> tuple[list[tuple[float, str]], dict[str, Any]]:
    """The output chunks (with arrival times since the request) and the final envelope."""
    started = time.monotonic()
    chunks: list[tuple[float, str]] = []
    final: dict[str, Any] | None = None
    with shared_http.stream("POST", f"{gateway}/v1/shell/exec", json=body, headers=SSE, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for name, data in sse_events(response):
            if name == "output":
                chunks.append((time.monotonic() - started, data["output"]))
            else:
                assert name == "result" and final is None
                final = data
    assert final is not None
    return chunks, final


def test_output_is_streamed_then_the_json_answer(gateway: str) -> None:
    started = time.monotonic()
    chunks, final = stream_exec(gateway, {"command": "echo first; sleep 1.5; echo last"})
    finished = time.monotonic() - started
    assert "".join(text for _, text in chunks) == "first\nlast\n"
    assert chunks[0][1] == "first\n" and chunks[0][0] < finished - 1.0
    assert final["success"] is True
    data = final["data"]
    assert (data["status"], data["output"], data["exit_code"]) == ("completed", "first\nlast\n", 0)


def test_timeout_ends_the_stream_while_the_command_runs(gateway: str) -> None:
    token = sleep_token()
    chunks, final = stream_exec(gateway, {"command": f"echo up; sleep {token}", "timeout": 1})
    assert [text for _, text in chunks] == ["up\n"]
    assert final["data"]["status"] == "running"
    assert live_processes(f"sleep {token}")
    shared_http.post(f"{gateway}/v1/shell/kill", json={"id": final["data"]["session_id"]}, timeout=10)


def test_streamed_text_agrees_with_bash_output_offsets(gateway: str) -> None:
    session = shared_http.post(f"{gateway}/v1/bash/sessions/create", json={}, timeout=10).json()["data"]["session_id"]
    command = "for i in $(seq 1 300); do echo line-$i; done; printf 'é€ end'"
    chunks, final = stream_exec(gateway, {"command": command, "id": session})
    streamed = "".join(text for _, text in chunks)
    assert streamed == final["data"]["output"]
    for offset in (0, 7, len(streamed) // 2, len(streamed)):
        data = shared_http.post(
            f"{gateway}/v1/bash/output", json={"session_id": session, "offset": offset}, timeout=10
        ).json()["data"]
        assert data["stdout"] == streamed[offset:]
        assert data["offset"] == len(streamed)


def test_async_bash_polling_reads_what_a_stream_reads(gateway: str) -> None:
    command = "for i in $(seq 1 20); do echo n-$i; sleep 0.02; done"
    streamed = "".join(text for _, text in stream_exec(gateway, {"command": command})[0])
    started = shared_http.post(
        f"{gateway}/v1/bash/exec", json={"command": command, "async_mode": True}, timeout=10
    ).json()["data"]
    polled, offset = "", 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        poll = {"session_id": started["session_id"], "offset": offset, "wait": True, "wait_timeout": 1}
        data = shared_http.post(f"{gateway}/v1/bash/output", json=poll, timeout=10).json()["data"]
        polled += data["stdout"]
        offset = data["offset"]
        if data["command"]["status"] != "running" and not data["stdout"]:
            break
    assert polled == streamed


def test_a_client_leaving_mid_stream_ends_only_its_stream(gateway: str) -> None:
    other: dict[str, Any] = {}

    def run_other() -> None:
        other.update(
            shared_http.post(f"{gateway}/v1/shell/exec", json={"command": "sleep 1; echo other"}, timeout=30).json()[
                "data"
            ]
        )

    thread = threading.Thread(target=run_other)
    thread.start()
    command = "for i in $(seq 1 20); do echo tick-$i; sleep 0.1; done"
    with shared_http.stream(
        "POST", f"{gateway}/v1/shell/exec", json={"command": command}, headers=SSE, timeout=30
    ) as response:
        name, data = next(sse_events(response))
        assert name == "output" and data["output"].startswith("tick-1")
        session = data["session_id"]
    thread.join(30)
    assert (other["status"], other["output"]) == ("completed", "other\n")
    waited = shared_http.post(f"{gateway}/v1/shell/wait", json={"id": session, "seconds": 10}, timeout=30).json()[
        "data"
    ]
    assert waited == {"status": "completed", "exit_code": 0}
    view = shared_http.post(f"{gateway}/v1/shell/view", json={"id": session}, timeout=10).json()["data"]
    assert view["output"].endswith("tick-20\n")
    assert shared_http.get(f"{gateway}/health", timeout=5).status_code == 200


def rss_bytes() -> int:
    """This process's resident memory (the gateway under test runs in it)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_gigabyte_streams_through_in_bounded_memory(gateway: str) -> None:
    stream_exec(gateway, {"command": "seq 1 100000"})  # warm up: first-use allocations out of the measure
    before = rss_bytes()
    size = 1_000_000_000
    received = 0
    started = time.monotonic()
    with shared_http.stream(
        "POST",
        f"{gateway}/v1/shell/exec",
        headers=SSE,
        timeout=120,
        json={"command": f"yes 0123456789abcdef | head -c {size}", "timeout": 300},
    ) as response:
        for name, data in sse_events(response):
            if name == "output":
                received += len(data["output"])
            else:
                final = data["data"]
    elapsed = time.monotonic() - started
    growth = rss_bytes() - before
    print(f"\n1 GB streamed in {elapsed:.1f} s, {received / 1e6:.0f} MB received, RSS growth {growth / 1e6:.1f} MB")
    assert final["status"] == "completed" and final["exit_code"] == 0
    assert len(final["output"]) < 40_000  # the result keeps the output limit
    assert growth < 100_000_000


@pytest.mark.anyio
async def test_a_slow_reader_pauses_the_command_and_misses_nothing() -> None:
    """Far more output than the buffer keeps, read slowly: the command waits for the reader."""
    plane = ShellPlane(GatewaySettings())
    received: list[str] = []

    async def slow(chunk: str) -> None:
        received.append(chunk)
        await asyncio.sleep(0.01)

    try:
        record = await plane.run("seq 1 400000", on_output=slow)
    finally:
        await plane.aclose()
    expected = "".join(f"{i}\n" for i in range(1, 400001))
    assert len(expected) > 3 * STREAM_KEEP
    assert "".join(received) == expected
    assert record.exit_code == 0 and len(record.output.text(OUTPUT_LIMIT)) < OUTPUT_LIMIT + 100
