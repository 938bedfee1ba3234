"""Many implicit shell sessions at once, through both doors of a real gateway (served in this
process, so its shells are this process's children): the session limit holds, a full gateway says
so (MCP ``isError`` naming the limit, REST 429), no session is closed under a command that is
starting, and closing every session leaves no shell and no descriptor behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from agentbox_gateway.planes.shell.plane import MAX_SESSIONS
from tests.gateway.planes.shell.test_shell_plane import eventually

pytestmark = pytest.mark.anyio
CLIENTS = 64
LIMIT_TEXT = f"limit {MAX_SESSIONS}"


def bash_children() -> list[int]:
    """Live bash processes started for this process (the in-process gateway's shells): its children,
    or children of its children (the shell plane's fork server)."""
    processes = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            data = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        command = data[data.index(b"(") + 1 : data.rindex(b")")]
        fields = data[data.rindex(b")") + 2 :].split()
        if fields[0] != b"Z":
            processes.append((int(name), int(fields[1]), command))
    ours = {os.getpid()} | {pid for pid, parent, _ in processes if parent == os.getpid()}
    return [pid for pid, parent, command in processes if command == b"bash" and parent in ours]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@contextlib.asynccontextmanager
async def session_counts(gateway: str) -> AsyncIterator[list[int]]:
    """Samples ``total_sessions`` every 20 ms while the block runs, from a first sample taken before
    it starts (the first ``/v1`` call builds the REST door, which may take longer than the block)."""
    seen: list[int] = []
    first = asyncio.Event()

    async def sample() -> None:
        async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
            while True:
                stats = (await http.get("/v1/shell/sessions/stats")).json()["data"]
                seen.append(stats["total_sessions"])
                first.set()
                await asyncio.sleep(0.02)

    task = asyncio.create_task(sample())
    try:
        await asyncio.wait_for(first.wait(), 30)
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def close_all_and_check(gateway: str, fds_before: int, shells_before: set[int]) -> None:
    """Close every session: no shell of this gateway may remain (others' may), nor its descriptors."""
    async with httpx.AsyncClient(base_url=gateway, timeout=60) as http:
        assert (await http.delete("/v1/shell/sessions")).status_code == 200
        assert (await http.get("/v1/shell/sessions/stats")).json()["data"]["total_sessions"] == 0
    assert await eventually(lambda: set(bash_children()) <= shells_before, 5), bash_children()
    assert open_fds() <= fds_before + 8, (fds_before, open_fds())


async def gather_timed(calls: list[Awaitable[Any]]) -> list[Any]:
    return await asyncio.wait_for(asyncio.gather(*calls), 120)


async def test_mcp_new_sessions_at_once_respect_the_limit(gateway: str, mcp_url: str) -> None:
    fds_before, shells_before = open_fds(), set(bash_children())
    async with Client(mcp_url) as client, session_counts(gateway) as seen:
        arguments = {"cmd": "sleep 0.3; echo ok", "new_session": True}
        results = await gather_timed([client.call_tool("sandbox_execute_bash", arguments) for _ in range(CLIENTS)])
    done = [json.loads(r.content[0].text) for r in results if not r.is_error]
    refused = [r.content[0].text for r in results if r.is_error]
    assert all(d["output"] == "ok\n" and d["exit_code"] == 0 for d in done), done
    assert all(LIMIT_TEXT in text for text in refused), refused
    assert len(done) >= MAX_SESSIONS
    assert max(seen) <= MAX_SESSIONS
    await close_all_and_check(gateway, fds_before, shells_before)


async def test_rest_exec_without_id_at_once_respects_the_limit(gateway: str) -> None:
    fds_before, shells_before = open_fds(), set(bash_children())
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=gateway, timeout=60, limits=limits) as http, session_counts(gateway) as seen:
        body = {"command": "sleep 0.3; echo ok"}
        answers = await gather_timed([http.post("/v1/shell/exec", json=body) for _ in range(CLIENTS)])
    done = [a.json()["data"] for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code != 200]
    assert all(d["output"] == "ok\n" and d["status"] == "completed" for d in done), done
    assert all(a.status_code == 429 and LIMIT_TEXT in a.json()["message"] for a in refused), [
        (a.status_code, a.text) for a in refused
    ]
    assert len(done) >= MAX_SESSIONS
    assert max(seen) <= MAX_SESSIONS
    await close_all_and_check(gateway, fds_before, shells_before)
