"""The shells' fork server (issue 30): shells start from a small process of their own rather than from
a fork of the gateway, exactly as they did before (own kernel session, default signals), and a fork
server that dies takes its shells with it and is replaced by the next shell."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from agentbox_gateway.planes.shell import ShellPlane
from tests.gateway.planes.shell.test_warm_spare import alive
from tests.support.polling import eventually

pytestmark = pytest.mark.anyio


def environ_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


async def test_a_shell_leads_its_session_with_default_signals(plane: ShellPlane) -> None:
    # SIGPIPE ignored (as in Python, and so in the fork server) would make `yes` fail writing instead.
    record = await plane.run("cut -d' ' -f6 /proc/$$/stat; echo $$; yes | head -n1; echo ${PIPESTATUS[0]}")
    session_id, pid, line, status = record.output.text().split()
    assert session_id == pid and (line, status) == ("y", "141")
    assert record.exit_code == 0


async def test_a_lost_fork_server_ends_its_shells_and_the_next_command_gets_a_fresh_one(plane: ShellPlane) -> None:
    session = await plane.create_session("s")
    first = await session.start("echo $$")
    await first.wait()
    pid = int(first.output.text())
    server = plane._spawner._server
    assert server is not None
    os.kill(server.pid, signal.SIGKILL)
    assert await eventually(lambda: not alive(pid)), "a shell outlived its fork server"
    again = await session.start("echo $$")
    await again.wait()
    assert again.exit_code == 0 and int(again.output.text()) != pid


async def test_the_fork_server_holds_none_of_the_gateway_s_secrets(
    plane: ShellPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIO_API_KEY", "fork-server-secret")
    record = await plane.run("echo ${AIO_API_KEY:-none}")
    assert record.output.text() == "none\n"
    server = plane._spawner._server
    assert server is not None
    assert b"fork-server-secret" not in environ_of(server.pid)
