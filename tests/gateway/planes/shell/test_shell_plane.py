"""The shell plane on its own: persistent sessions, the marker protocol, kills, stdin, limits."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path

import pytest

from agentbox_gateway.planes.shell import (
    InvalidRequest,
    OutputBuffer,
    SessionBusy,
    SessionLimit,
    SessionNotFound,
    ShellPlane,
    truncate_middle,
)
from agentbox_gateway.planes.shell.commands import CommandRequest
from agentbox_gateway.settings import GatewaySettings
from tests.support.polling import eventually

pytestmark = pytest.mark.anyio


def live_processes(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line is ``token``: the ``sleep`` itself,
    not the ``setsid sleep …`` that starts it (under load the sleep can start a while after)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.rstrip() == token.encode() and state != b"Z":
            found.append(int(name))
    return found


def sleep_token() -> str:
    """A sleep duration no other process on the machine uses, to find ours in ``/proc``."""
    return f"{random.randint(100_000, 999_999)}"


async def test_state_persists_in_the_shared_session(plane: ShellPlane) -> None:
    await plane.run("cd /usr && export AGENTBOX_T=kept && greet() { echo hello \"$1\"; } && alias ll='echo alias'")
    record = await plane.run("pwd; echo $AGENTBOX_T; greet you; ll")
    assert record.output.text() == "/usr\nkept\nhello you\nalias\n"
    assert (record.cwd, record.exit_code, record.status, record.session_id) == ("/usr", 0, "completed", "default")
    fresh = await plane.run("echo [$AGENTBOX_T]; type greet >/dev/null 2>&1 || echo no-greet", new_session=True)
    assert fresh.output.text() == "[]\nno-greet\n" and fresh.session_id != "default"


async def test_output_is_interleaved_exact_and_needs_no_trailing_newline(plane: ShellPlane) -> None:
    record = await plane.run("echo out; echo err >&2; printf 'no newline'")
    assert record.output.text() == "out\nerr\nno newline"
    binary = await plane.run(r"printf 'a\0b\037c\xff\xe2\x82'; printf '\xacd'")
    assert binary.output.text() == "a\0b\x1fc\ufffd\u20acd"


async def test_any_command_text_survives_quoting(plane: ShellPlane) -> None:
    command = "printf '%s\\n' \"it's \\\"quoted\\\" \\\\ \\$HOME\" $'tab\\there'\ncat <<'EOF'\nline $x\n\tEOF?\nEOF"
    record = await plane.run(command)
    assert record.output.text() == 'it\'s "quoted" \\ $HOME\ntab\there\nline $x\n\tEOF?\n'
    broken = await plane.run("echo 'unterminated")
    assert broken.exit_code == 2 and "unexpected EOF" in broken.output.text()
    assert (await plane.run("echo still fine")).output.text() == "still fine\n"


async def test_stdin_is_empty_and_background_jobs_do_not_block(plane: ShellPlane) -> None:
    token = sleep_token()
    started = time.monotonic()
    record = await plane.run(f"cat; read -r line; echo read=$?; sleep {token} & echo started")
    assert record.output.text() == "read=1\nstarted\n"
    assert time.monotonic() - started < 5
    assert await eventually(lambda: live_processes(f"sleep {token}"))


async def test_timeout_kills_the_command_tree_and_skips_the_rest_of_the_line(plane: ShellPlane) -> None:
    token = sleep_token()
    await plane.run("export KEEP=me")
    started = time.monotonic()
    record = await plane.run(f"sh -c 'sleep {token} & sleep {token}'; echo after", time_limit=1)
    assert time.monotonic() - started < 5
    assert (record.status, record.exit_code) == ("hard_timeout", 137)
    assert "after" not in record.output.text()
    assert await eventually(lambda: not live_processes(f"sleep {token}"), 1)
    assert (await plane.run("echo $KEEP")).output.text() == "me\n"


async def test_timeout_breaks_builtin_loops_without_losing_the_shell(plane: ShellPlane) -> None:
    await plane.run("export KEEP=loop")
    record = await plane.run("while :; do :; done; echo after", time_limit=1)
    assert (record.status, record.exit_code, record.output.text()) == ("hard_timeout", 137, "")
    assert (await plane.run("echo $KEEP")).output.text() == "loop\n"


async def test_a_shell_that_must_die_is_replaced_in_the_same_directory(plane: ShellPlane) -> None:
    token = sleep_token()
    await plane.run("export LOST=yes", cwd="/usr")
    record = await plane.run(f"f() {{ sleep {token}; echo rest-of-function; }}; f", time_limit=1)
    assert record.status == "hard_timeout"
    assert "rest-of-function" not in record.output.text()
    assert "shell was killed" in record.output.text()
    after = await plane.run("pwd; echo [$LOST]")
    assert after.output.text() == "/usr\n[]\n"
    exited = await plane.run("echo bye; exit 7")
    assert exited.exit_code == 7 and exited.output.text().startswith("bye\n")
    assert (await plane.run("pwd")).output.text() == "/usr\n"


@pytest.mark.parametrize(
    "earlier, later",
    [("sleep {old} &", "sleep {new}"), ("setsid sleep {old} &", "setsid sleep {new} & sleep 30")],
    ids=["job", "setsid"],
)
async def test_earlier_background_jobs_survive_a_timeout_and_die_with_the_session(
    plane: ShellPlane, earlier: str, later: str
) -> None:
    old, new = sleep_token(), sleep_token()
    session = await plane.create_session()
    await plane.run(earlier.format(old=old), session_id=session.session_id)
    assert await eventually(lambda: live_processes(f"sleep {old}"))
    # Start times are clock ticks (10 ms): a process started in the tick the next command starts in
    # counts as that command's (the setsid'd sleep is no job of the shell's to spare it otherwise).
    await asyncio.sleep(2 / os.sysconf("SC_CLK_TCK"))
    record = await plane.run(later.format(new=new), session_id=session.session_id, time_limit=1)
    assert record.status == "hard_timeout"
    assert await eventually(lambda: not live_processes(f"sleep {new}"), 2)
    assert live_processes(f"sleep {old}")
    await plane.close_session(session.session_id)
    assert await eventually(lambda: not live_processes(f"sleep {old}"), 2)
    with pytest.raises(SessionNotFound):
        await plane.session(session.session_id)


async def test_cwd_moves_the_session_and_must_exist(plane: ShellPlane) -> None:
    record = await plane.run("pwd", cwd="/tmp")
    assert record.output.text() == "/tmp\n" and record.cwd == "/tmp"
    assert (await plane.run("pwd")).cwd == "/tmp"
    with pytest.raises(InvalidRequest, match="does not exist"):
        await plane.run("pwd", cwd="/definitely/not/here")
    assert (await plane.run("pwd")).cwd == "/tmp"


async def test_a_lenient_cwd_that_is_no_directory_stays_in_the_session_directory(plane: ShellPlane) -> None:
    session = await plane.session_or_create(None)
    await (await session.start("cd /tmp")).wait()
    record = await session.start("pwd", cwd="/definitely/not/here", strict_cwd=False)
    await record.wait()
    assert record.output.text() == "/tmp\n"
    with pytest.raises(InvalidRequest, match="does not exist"):
        await session.start("pwd", cwd="/definitely/not/here")


async def test_a_session_starts_from_a_snapshot_or_not_at_all(plane: ShellPlane, tmp_path: Path) -> None:
    snapshot = tmp_path / "state.sh"
    snapshot.write_text("export FROM_SNAPSHOT=yes\ngreet() { echo hello $1; }\n")
    session = await plane.create_session("snap", snapshot=str(snapshot))
    record = await session.start('echo "$FROM_SNAPSHOT"; greet you')
    await record.wait()
    assert record.output.text() == "yes\nhello you\n"
    broken = tmp_path / "broken.sh"
    broken.write_text("echo half >&2; return 3\n")
    with pytest.raises(InvalidRequest, match=r"sourcing .*broken.sh failed \(exit 3\): half"):
        await plane.create_session("snap-broken", snapshot=str(broken))
    assert [s.session_id for s in plane.sessions()] == ["snap"]


async def test_secrets_are_not_in_the_environment(plane: ShellPlane, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIO_API_KEY", "plane-secret-123")
    record = await plane.run('echo "[$AIO_API_KEY]"; env | grep -c plane-secret-123', new_session=True)
    assert record.output.text() == "[]\n0\n"


async def test_interactive_stdin_write_and_eof(plane: ShellPlane) -> None:
    session = await plane.create_session()
    record = await session.start("read -r name; echo hi $name; cat | wc -l", interactive=True)
    await session.write("ada\n")
    await session.write("one\ntwo\n\x04")
    assert await record.wait(5) == "done"
    assert record.output.text().split() == ["hi", "ada", "2"]
    assert record.exit_code == 0
    with pytest.raises(Exception, match="no command is running"):
        await session.write("late")


async def test_interactive_stdin_ends_even_before_the_shell_opens_it(plane: ShellPlane) -> None:
    session = await plane.create_session()
    for _ in range(20):
        record = await session.start("cat", interactive=True)
        await session.write("x\x04")  # EOF at once, perhaps before bash has opened its stdin
        assert await record.wait(5) == "done"
        assert record.output.text() == "x"
        assert record.stdin is not None and not await asyncio.to_thread(os.path.lexists, record.stdin.path)


async def test_setsid_processes_die_with_the_command_and_the_session(plane: ShellPlane) -> None:
    timed, closed, double = sleep_token(), sleep_token(), sleep_token()
    record = await plane.run(f"setsid sleep {timed} & sleep 30", time_limit=1)
    assert record.status == "hard_timeout"
    assert await eventually(lambda: not live_processes(f"sleep {timed}"), 2)
    session = await plane.create_session()
    await plane.run(f"setsid sleep {closed} & (setsid sleep {double} &)", session_id=session.session_id)
    assert await eventually(lambda: live_processes(f"sleep {closed}") and live_processes(f"sleep {double}"))
    await plane.close_session(session.session_id)
    assert await eventually(lambda: not live_processes(f"sleep {closed}") and not live_processes(f"sleep {double}"), 2)
    await plane.run(f"setsid sleep {closed} &")
    assert await eventually(lambda: live_processes(f"sleep {closed}"))
    await plane.aclose()
    assert await eventually(lambda: not live_processes(f"sleep {closed}"), 2)


async def test_busy_sessions_refuse_or_queue(plane: ShellPlane) -> None:
    session = await plane.create_session()
    running = await session.start("sleep 0.5; echo first")
    with pytest.raises(SessionBusy):
        await session.start("echo second")
    queued = await session.start("echo second", busy_wait=5)
    assert running.done and running.output.text() == "first\n"
    await queued.wait()
    assert queued.output.text() == "second\n"
    both = await asyncio.gather(plane.run("echo a; sleep 0.2; echo b"), plane.run("echo c"))
    assert sorted(r.output.text() for r in both) == ["a\nb\n", "c\n"]


async def test_a_busy_session_serves_its_waiters_first_come_first_served(plane: ShellPlane) -> None:
    session = await plane.create_session()
    running = await session.start("sleep 0.3")
    waiters = []
    for index in range(8):
        waiters.append(asyncio.create_task(session.start(f"echo {index}", busy_wait=10)))
        await asyncio.sleep(0.01)  # arrival order is creation order

    async def right_after_the_release() -> None:
        """Arrives when the running command ends, before the first waiter had its turn: it queues last."""
        await running.wait()
        await (await session.start("echo late", busy_wait=10)).wait()

    late = asyncio.create_task(right_after_the_release())
    for waiter in waiters:
        await (await waiter).wait()
    await late
    assert [record.command for record in session.history][-10:] == [
        "sleep 0.3",
        *(f"echo {index}" for index in range(8)),
        "echo late",
    ]


async def test_a_waiter_that_gives_up_passes_the_turn_on(plane: ShellPlane) -> None:
    session = await plane.create_session()
    running = await session.start("sleep 0.4")
    impatient = asyncio.create_task(session.start("echo impatient", busy_wait=0.1))
    patient = asyncio.create_task(session.start("echo patient", busy_wait=10))
    with pytest.raises(SessionBusy):
        await impatient
    await running.wait()
    assert (await (await patient).wait()) is not None and session.last.output.text() == "patient\n"
    assert not session.busy


async def test_signal_stops_the_command_and_reports_it(plane: ShellPlane) -> None:
    session = await plane.create_session()
    record = await session.start("sleep 30; echo after", merged=False)
    assert await record.wait(0.2) == "timeout"
    stopped = await session.send_signal(signal.SIGTERM)
    assert stopped is record and record.done
    assert (record.status, record.exit_code) == ("terminated", 143)
    assert "after" not in record.stdout.text()


async def test_the_event_loop_keeps_running_during_a_command(plane: ShellPlane) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    try:
        await plane.run("sleep 0.5")
    finally:
        task.cancel()
    assert ticks >= 20


async def test_session_limit_evicts_implicit_sessions_then_refuses() -> None:
    plane = ShellPlane(GatewaySettings(), max_sessions=3)
    try:
        first = await plane.run("true", new_session=True)
        await plane.create_session("keep-1")
        await plane.create_session("keep-2")
        await plane.run("true", new_session=True)  # evicts the implicit one
        assert {s.session_id for s in plane.sessions()} >= {"keep-1", "keep-2"}
        assert first.session_id not in {s.session_id for s in plane.sessions()}
        await plane.create_session("keep-3")  # evicts the second implicit one
        with pytest.raises(SessionLimit, match="limit 3"):
            await plane.create_session("one-too-many")
        assert plane.stats().total_sessions == 3 and plane.stats().usage_ratio == 1.0
    finally:
        await plane.aclose()


async def test_huge_output_keeps_memory_bounded_and_truncates_head_and_tail(plane: ShellPlane) -> None:
    record = await plane.run("seq 1 400000")
    text = record.output.text(30_000)
    assert text.startswith("1\n2\n3\n") and text.endswith("399999\n400000\n")
    assert "characters truncated" in text and len(text) < 30_100
    assert record.output.dropped > 0
    assert record.output.read(record.output.total - 7) == "400000\n"


def test_output_buffer_offsets_and_truncation() -> None:
    buffer = OutputBuffer(keep=10)
    for chunk in ("0123456789", "abcdefghij", "ABCDEFGHIJ", "klmnopqrst"):
        buffer.append(chunk)
    # The head keeps the first 10, the tail between 10 and 20 of the last characters.
    assert buffer.total == 40 and buffer.dropped == 20
    assert buffer.read(35) == "pqrst"
    assert buffer.read(5) == "56789" + "\n\n[... 20 characters truncated ...]\n\n" + "klmnopqrst"
    assert buffer.text(8) == "0123" + "\n\n[... 32 characters truncated ...]\n\n" + "qrst"
    assert buffer.read(40) == ""
    assert truncate_middle("abcdefghij", 4) == "ab" + "\n\n[... 6 characters truncated ...]\n\n" + "ij"
    assert truncate_middle("short", 0) == "short"


async def test_aclose_kills_every_job() -> None:
    token = sleep_token()
    plane = ShellPlane(GatewaySettings())
    await plane.run(f"sleep {token} &")
    await plane.run(f"(sleep {token} &)", new_session=True)
    assert await eventually(lambda: len(live_processes(f"sleep {token}")) == 2)
    await plane.aclose()
    assert await eventually(lambda: not live_processes(f"sleep {token}"), 1)


async def test_a_command_killed_as_it_starts_ends_killed_not_its_shell(plane: ShellPlane) -> None:
    """The abort signal waits for the shell's trap: sent before bash has run its init script it would
    end the shell (exit 140, SIGUSR2) instead of the command (137, SIGKILL); failed 39 times in 40."""
    codes = []
    for _ in range(10):
        command = await plane.commands.start(CommandRequest("echo up; sleep 60"))
        await plane.commands.kill(command.command_id, signal.SIGKILL)
        await command.record.finished.wait()
        codes.append(command.record.exit_code)
    assert codes == [137] * 10
