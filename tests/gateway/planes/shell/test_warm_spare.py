"""The shell plane's warm spare bash and the closing of sessions one-off REST calls made (issue 30):
a new session gets a bash started before it was asked for, with nothing of anybody else's state,
and sessions nobody kept do not pile up."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentbox_gateway.planes.shell import ShellPlane
from agentbox_gateway.planes.shell.commands import CommandRequest
from agentbox_gateway.planes.shell.session import ShellSession
from agentbox_gateway.settings import GatewaySettings
from tests.support.polling import eventually

pytestmark = pytest.mark.anyio


def started_at(pid: int) -> float:
    """When process ``pid`` started, in seconds since boot (field 22 of /proc/<pid>/stat)."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    return ticks / os.sysconf("SC_CLK_TCK")


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
async def plane() -> AsyncIterator[ShellPlane]:
    shell = ShellPlane(GatewaySettings(), implicit_grace=0.3)
    try:
        yield shell
    finally:
        await shell.aclose()


async def shell_pid(plane: ShellPlane, session_id: str) -> int:
    session = await plane.session(session_id)
    record = await session.start("echo $$")
    await record.wait()
    return int(record.output.text())


async def test_a_new_session_takes_the_spare_started_before_it_was_asked_for(plane: ShellPlane) -> None:
    await plane.create_session("first")
    assert await eventually(lambda: plane.spare_ready), "no spare bash was started after the first session"
    await asyncio.sleep(0.5)  # so a bash started by the next call would be visibly younger
    asked = uptime()
    second = await plane.create_session("second")
    pid = await shell_pid(plane, second.session_id)
    assert started_at(pid) < asked - 0.2, "the second session's bash was started on demand, not taken warm"
    assert await eventually(lambda: plane.spare_ready), "the spare taken was not replaced"


async def test_the_spare_carries_no_state_and_takes_its_new_name(plane: ShellPlane) -> None:
    await plane.run("export AGENTBOX_SPARE_T=leaked; cd /usr", session_id="default")
    assert await eventually(lambda: plane.spare_ready)
    fresh = await plane.run("echo [${AGENTBOX_SPARE_T:-}] $(pwd)", new_session=True)
    assert fresh.output.text() == f"[] {Path.home()}\n"
    assert fresh.session_id != "spare" and fresh.session_id in {s.session_id for s in plane.sessions()}
    assert (await plane.session(fresh.session_id)).command_count == 1


async def test_a_session_in_another_directory_or_with_symlinks_kept_starts_its_own_bash(plane: ShellPlane) -> None:
    await plane.create_session("first")
    assert await eventually(lambda: plane.spare_ready)
    await plane.create_session("elsewhere", cwd="/tmp")
    await plane.create_session("links", preserve_symlinks=True)
    assert plane.spare_ready, "the spare was used for a session it does not suit"
    record = await (await plane.session("elsewhere")).start("pwd")
    await record.wait()
    assert record.output.text() == "/tmp\n"


async def test_closing_the_plane_ends_the_spare_bash() -> None:
    plane = ShellPlane(GatewaySettings())
    await plane.create_session("first")
    assert await eventually(lambda: plane.spare_ready)
    assert plane._spare is not None
    spare_pid = (await plane._spare.ensure_shell()).pid
    assert spare_pid is not None and alive(spare_pid)
    await plane.aclose()
    assert await eventually(lambda: not alive(spare_pid)), "the spare bash outlived its plane"


async def test_a_session_made_for_a_one_off_call_closes_after_its_command(plane: ShellPlane) -> None:
    session = await plane.session_or_create(None)
    record = await session.start("echo once")
    plane.release_when_done(session, record)
    await record.wait()
    assert session.session_id in {s.session_id for s in plane.sessions()}, "closed before the grace passed"
    assert await eventually(lambda: session.session_id not in {s.session_id for s in plane.sessions()})
    assert session.closed


async def test_a_one_off_session_whose_id_is_used_again_is_kept(plane: ShellPlane) -> None:
    session = await plane.session_or_create(None)
    record = await session.start("cd /usr")
    plane.release_when_done(session, record)
    await record.wait()
    again = await plane.session(session.session_id)  # the caller kept the id
    await asyncio.sleep(0.6)
    assert not again.closed
    later = await again.start("pwd")
    await later.wait()
    assert later.output.text() == "/usr\n"


async def test_a_one_off_session_stays_while_its_command_runs(plane: ShellPlane) -> None:
    session = await plane.session_or_create(None)
    record = await session.start("sleep 0.8; echo done")
    plane.release_when_done(session, record)
    await asyncio.sleep(0.5)
    assert not session.closed
    await record.wait()
    assert record.output.text() == "done\n"
    assert await eventually(lambda: session.closed)


async def test_named_sessions_are_never_released(plane: ShellPlane) -> None:
    session = await plane.session_or_create("mine")
    record = await session.start("true")
    plane.release_when_done(session, record)
    await record.wait()
    await asyncio.sleep(0.6)
    assert not session.closed


async def test_closing_every_session_ends_the_spare_too(plane: ShellPlane) -> None:
    await plane.create_session("first")
    assert await eventually(lambda: plane.spare_ready)
    assert plane._spare is not None
    spare_pid = (await plane._spare.ensure_shell()).pid
    assert spare_pid is not None
    await plane.close_all()
    assert not plane.spare_ready
    assert await eventually(lambda: not alive(spare_pid)), "a spare bash outlived close_all"


async def test_a_command_in_a_shell_of_its_own_takes_the_spare(plane: ShellPlane) -> None:
    await plane.create_session("first")
    assert await eventually(lambda: plane.spare_ready)
    await asyncio.sleep(0.5)
    asked = uptime()
    command = await plane.commands.start(CommandRequest("echo $$"))
    await command.record.wait()
    assert started_at(int(command.record.stdout.text())) < asked - 0.2, "its bash was started on demand"
    assert command.session_id is None and command.session not in plane.sessions()
    assert await eventually(lambda: plane.spare_ready), "the spare taken was not replaced"


async def test_back_to_back_one_off_sessions_each_take_a_warm_bash(
    plane: ShellPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REST exec without an id, call after call: none starts a bash of its own; each takes the spare
    its predecessor's call set on its way (issue 30: this one started cold, 5x MCP's time)."""
    taken: list[ShellSession] = []
    adopt = ShellSession.adopt

    def spy(session: ShellSession, session_id: str, *, auto: bool, no_change_timeout: int) -> None:
        taken.append(session)
        adopt(session, session_id, auto=auto, no_change_timeout=no_change_timeout)

    monkeypatch.setattr(ShellSession, "adopt", spy)
    await plane.create_session("first")  # the first new session starts the first spare
    made = []
    for _ in range(10):
        session = await plane.session_or_create(None)
        record = await session.start("echo hi")
        plane.release_when_done(session, record)
        await record.wait()
        assert record.output.text() == "hi\n"
        made.append(session)
    assert taken[-10:] == made, "a back-to-back new session started its own bash"
