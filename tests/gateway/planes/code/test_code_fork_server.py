"""The Python fork server forks each call's child before the call comes: that waiting child never
outlives the server, and one killed while it waits is replaced without losing a call."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agentbox_gateway.planes.code import CodePlane
from agentbox_gateway.settings import GatewaySettings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def plane() -> AsyncIterator[CodePlane]:
    code = CodePlane(GatewaySettings.from_env({}))
    try:
        yield code
    finally:
        await code.aclose()


def children_of(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


async def eventually(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "not within the bound"
        await asyncio.sleep(0.02)


async def server_and_waiting_child(plane: CodePlane) -> tuple[int, int]:
    run = await plane.execute("python", "import os\nprint(os.getppid())")
    server = int(run.stdout)
    seen: list[int] = []

    def one_child() -> bool:
        seen[:] = children_of(server)  # the list that was checked is the one answered
        return len(seen) == 1

    await eventually(one_child)
    return server, seen[0]


async def test_the_waiting_child_ends_with_its_server(plane: CodePlane) -> None:
    _, child = await server_and_waiting_child(plane)
    await plane.aclose()
    await eventually(lambda: gone(child))


async def test_a_waiting_child_killed_is_replaced_and_the_next_call_runs(plane: CodePlane) -> None:
    # The one child seen may be the last call's, still exiting before its replacement is forked: then
    # it is gone by the time it is killed, and the waiting one is looked for again.
    for _ in range(20):
        server, child = await server_and_waiting_child(plane)
        try:
            os.kill(child, signal.SIGKILL)
            break
        except ProcessLookupError:
            continue
    else:
        raise AssertionError("no waiting child stayed long enough to be killed")
    await eventually(lambda: children_of(server) not in ([], [child]))
    run = await plane.execute("python", "import os\nprint(os.getppid())", timeout=10)
    assert (run.status, run.stdout) == ("ok", f"{server}\n")
