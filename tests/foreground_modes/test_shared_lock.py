"""One workspace lock across processes: while ``agentbox-cron`` runs a job in a workspace, MCP
``run_prompt`` in another process is refused there (an error result, no agent started), and while
``run_prompt`` holds it, cron skips its tick (logged)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import anyio
import pytest

from agentbox_mcp_mode.locks import WorkspaceBusy, WorkspaceLocks
from tests.mcp_mode.conftest import make_settings  # noqa: F401 - fixture reused here
from tests.mcp_mode.helpers import StandIn, mcp_client, serve_settings, tool_text, wait_gone
from tests.support.servers import console_script, run_command, stop_group

from .helpers import write_jobs

pytestmark = pytest.mark.anyio
CRON = console_script("agentbox-cron")


SharedJob = Callable[[str, str], dict[str, str]]


@pytest.fixture
def shared_job(tmp_path: Path, mode_env: dict[str, str]) -> SharedJob:
    """cron's environment with one every-second job, named and told what to do, in the workspace ``shared``."""

    def job_env(name: str, instruction: str) -> dict[str, str]:
        job = {"name": name, "schedule": "* * * * * *", "workspace": "shared", "instruction": instruction}
        return {**mode_env, "AICODEBOX_CRON_MODE_FILE": str(write_jobs(tmp_path / "cron.yml", [job]))}

    return job_env


@pytest.fixture
def mcp_url(make_settings) -> Iterator[str]:  # noqa: F811
    """MCP mode in this process, on the workspaces cron runs in."""
    with serve_settings(make_settings()) as base:
        yield f"{base}/mcp"


async def test_mcp_is_refused_while_cron_runs_in_the_workspace(
    shared_job: SharedJob, mcp_url: str, stand_in: StandIn, workspace: Path
) -> None:
    with run_command([CRON], shared_job("hold", "CHILD\nSLEEP 30")) as cron:
        (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        async with mcp_client(mcp_url) as client:
            started = time.monotonic()
            outcome = await client.call_tool("run_prompt", {"prompt": "ANSWER no", "workspace": "shared"})
        assert time.monotonic() - started < 2
        assert outcome.is_error
        assert tool_text(outcome) == f"workspace {workspace / 'shared'} is busy with another run"
        assert len(stand_in.calls()) == 1
        stop_group(cron)
    await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])


def read_until(stream: IO[bytes], text: str, timeout: float) -> str:
    """Lines of ``stream`` up to the first holding ``text`` (or all there were within ``timeout``): a
    loaded machine starts cron in more than a second."""
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = stream.readline().decode(errors="replace")
        lines.append(line)
        if not line or text in line:
            break
    return "".join(lines)


async def test_cron_skips_its_tick_while_mcp_runs_in_the_workspace(
    shared_job: SharedJob, mcp_url: str, stand_in: StandIn, workspace: Path
) -> None:
    async with mcp_client(mcp_url) as client, anyio.create_task_group() as tg:
        tg.start_soon(client.call_tool, "run_prompt", {"prompt": "CHILD\nSLEEP 30", "workspace": "shared"})
        (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        with run_command([CRON], shared_job("blocked", "ANSWER cron ran")) as cron:
            assert cron.stdout is not None
            log = await anyio.to_thread.run_sync(read_until, cron.stdout, "is busy with another run", 30.0)
            await anyio.sleep(1.5)  # more ticks, all skipped
            assert len(stand_in.calls()) == 1  # cron started no agent
            stop_group(cron)
            log += cron.stdout.read().decode(errors="replace")
        tg.cancel_scope.cancel()
    assert "cron job blocked: tick at" in log
    assert f"skipped: workspace {workspace / 'shared'} is busy with another run" in log
    await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])


def test_the_file_lock_is_dropped_on_release(tmp_path: Path) -> None:
    first, second = WorkspaceLocks(tmp_path / "locks"), WorkspaceLocks(tmp_path / "locks")
    first.acquire("/w")
    with pytest.raises(WorkspaceBusy):
        second.acquire("/w")
    assert not second.is_busy("/w")
    second.acquire("/other")  # other workspaces are free
    first.release("/w")
    with second.hold("/w"):
        assert second.busy() == ["/other", "/w"]
