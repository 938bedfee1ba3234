"""``/v1/shell/*`` and ``/v1/bash/*`` through a real gateway, driven by the public ``agent-sandbox``
SDK, which parses every answer into its own models (a missing required field fails the test)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from agent_sandbox import Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.errors import UnprocessableEntityError

from tests.gateway.planes.shell.test_shell_plane import live_processes
from tests.support import shared_http
from tests.support.polling import until


def token() -> str:
    return f"{random.randint(100_000, 999_999)}"


@pytest.fixture
def sandbox(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=30)


def status_of(call: Callable[[], object]) -> int | None:
    with pytest.raises(ApiError) as failure:
        call()
    return failure.value.status_code


def test_exec_reports_output_and_non_zero_exit(sandbox: Sandbox) -> None:
    answer = sandbox.shell.exec_command(command="echo out; echo err >&2; export KEPT=1; false")
    assert answer.success is True
    data = answer.data
    assert (data.status, data.output, data.exit_code) == ("completed", "out\nerr\n", 1)
    again = sandbox.shell.exec_command(command="echo $KEPT", id=data.session_id).data
    assert again.output == "1\n" and again.session_id == data.session_id
    other = sandbox.shell.exec_command(command="echo [$KEPT]").data
    assert other.output == "[]\n" and other.session_id != data.session_id


def test_exec_dir_strict_and_lenient(sandbox: Sandbox) -> None:
    created = sandbox.shell.create_session(id="rest-dirs", exec_dir="/usr").data
    assert (created.session_id, created.working_dir) == ("rest-dirs", "/usr")
    moved = sandbox.shell.exec_command(command="pwd", id="rest-dirs", exec_dir="/tmp").data
    assert moved.output == "/tmp\n"
    lenient = sandbox.shell.exec_command(command="pwd", id="rest-dirs", exec_dir="/no/such/dir").data
    assert lenient.output == "/tmp\n"
    assert (
        status_of(lambda: sandbox.shell.exec_command(command="pwd", id="rest-dirs", exec_dir="/no/such", strict=True))
        == 400
    )
    assert status_of(lambda: sandbox.shell.create_session(id="rest-dirs")) == 409


def test_async_exec_write_view_wait_and_kill(sandbox: Sandbox) -> None:
    sleeper = token()
    started = sandbox.shell.exec_command(command=f"read -r name; echo got $name; sleep {sleeper}", async_mode=True).data
    assert started.status == "running" and started.exit_code is None
    sid = started.session_id
    assert status_of(lambda: sandbox.shell.exec_command(command="true", id=sid)) == 409
    assert sandbox.shell.write_to_process(id=sid, input="ada", press_enter=True).data.status == "running"
    view = until(lambda: (v := sandbox.shell.view(id=sid).data).output == "got ada\n" and v)
    assert view.status == "running" and view.command.startswith("read -r name")
    assert sandbox.shell.wait_for_process(id=sid, seconds=1).data.status == "running"
    killed = sandbox.shell.kill_process(id=sid).data
    assert (killed.status, killed.exit_code, killed.returncode) == ("terminated", 137, 137)
    assert sandbox.shell.wait_for_process(id=sid, seconds=1).data.status == "terminated"
    assert until(lambda: not live_processes(f"sleep {sleeper}"), 2)
    final = sandbox.shell.view(id=sid).data
    assert final.status == "terminated" and final.console[-1].command.startswith("read -r name")


def test_hard_and_no_change_timeouts(sandbox: Sandbox) -> None:
    sleeper = token()
    hard = sandbox.shell.exec_command(command=f"sleep {sleeper}; echo never", hard_timeout=1).data
    assert (hard.status, hard.exit_code) == ("hard_timeout", 137) and "never" not in hard.output
    quiet = sandbox.shell.exec_command(command="echo start; sleep 2; echo end", no_change_timeout=1).data
    assert (quiet.status, quiet.output) == ("no_change_timeout", "start\n")
    assert sandbox.shell.wait_for_process(id=quiet.session_id, seconds=5).data.status == "completed"
    assert sandbox.shell.view(id=quiet.session_id).data.output == "start\nend\n"
    waited = sandbox.shell.exec_command(command="sleep 1; echo late", timeout=0.2).data
    assert waited.status == "running"


def test_sessions_are_listed_counted_updated_and_closed(sandbox: Sandbox) -> None:
    sandbox.shell.create_session(id="rest-list", exec_dir="/tmp")
    sessions = sandbox.shell.list_sessions().data.sessions
    info = sessions["rest-list"]
    assert info.working_dir == "/tmp" and info.status == "ready" and info.age_seconds >= 0
    stats = sandbox.shell.get_session_stats().data
    assert stats.total_sessions >= 1 and stats.max_sessions == 20 and 0 < stats.usage_ratio <= 1
    updated = sandbox.shell.update_session(id="rest-list", no_change_timeout=5).data
    assert updated["no_change_timeout"] == 5
    sandbox.shell.cleanup_session(session_id="rest-list")
    assert status_of(lambda: sandbox.shell.view(id="rest-list")) == 404
    sandbox.shell.create_session(id="rest-other")
    assert sandbox.shell.cleanup_all_sessions().data["closed"] >= 1
    assert sandbox.shell.list_sessions().data.sessions == {}


def test_bash_exec_keeps_streams_apart_with_env_and_truncation(sandbox: Sandbox) -> None:
    data = sandbox.bash.exec(
        command='echo out; echo err >&2; echo "$GREETING"; exit 4', env={"GREETING": "hello there"}
    ).data
    assert (data.status, data.exit_code) == ("completed", 4)
    assert (data.stdout, data.stderr) == ("out\nhello there\n", "err\n")
    assert (data.offset, data.stderr_offset) == (len("out\nhello there\n"), 4)
    assert data.command_id
    long = sandbox.bash.exec(command="seq 1 10000", max_output_length=100).data
    assert long.stdout.startswith("1\n2\n") and long.stdout.endswith("9999\n10000\n")
    assert "characters truncated" in long.stdout and long.offset == len("".join(f"{i}\n" for i in range(1, 10001)))
    full = sandbox.bash.exec(command="seq 1 10000", max_output_length=0).data
    assert len(full.stdout) == full.offset
    assert status_of(lambda: sandbox.bash.exec(command="true", exec_dir="/no/such/dir")) == 400


def test_bash_async_output_offsets_and_kill(sandbox: Sandbox) -> None:
    sleeper = token()
    started = sandbox.bash.exec(
        command=f"for i in 1 2 3; do echo line$i; sleep 0.2; done; sleep {sleeper}", async_mode=True
    ).data
    assert started.status == "running"
    sid, offset, pieces = started.session_id, 0, []
    deadline = time.monotonic() + 10
    while "".join(pieces) != "line1\nline2\nline3\n":
        assert time.monotonic() < deadline, pieces
        chunk = sandbox.bash.output(session_id=sid, offset=offset, wait=True, wait_timeout=2).data
        pieces.append(chunk.stdout)
        offset = chunk.offset
        assert chunk.command.status == "running" and chunk.command.command_id == started.command_id
    assert len([p for p in pieces if p]) >= 2  # it streamed, it did not arrive in one piece
    sandbox.bash.kill(session_id=sid)
    after = sandbox.bash.output(session_id=sid, command_id=started.command_id, offset=offset).data
    assert after.command.status == "killed" and after.command.exit_code == 143 and after.stdout == ""
    assert until(lambda: not live_processes(f"sleep {sleeper}"), 2)


def test_bash_sessions_write_and_close(sandbox: Sandbox) -> None:
    session = sandbox.bash.create_session(session_id="rest-bash", exec_dir="/tmp").data
    assert (session.session_id, session.status, session.working_dir) == ("rest-bash", "ready", "/tmp")
    running = sandbox.bash.exec(command="tr a-z A-Z", session_id="rest-bash", async_mode=True).data
    sandbox.bash.write(session_id="rest-bash", input="hello\n\x04", command_id=running.command_id)
    done = sandbox.bash.output(session_id="rest-bash", wait=True, wait_timeout=5).data
    assert done.stdout == "HELLO\n"
    until(lambda: sandbox.bash.output(session_id="rest-bash").data.command.status == "completed")
    listed = {s.session_id: s for s in sandbox.bash.sessions().data}
    assert listed["rest-bash"].command_count == 1 and listed["rest-bash"].working_dir == "/tmp"
    sandbox.bash.close_session(session_id="rest-bash")
    assert status_of(lambda: sandbox.bash.output(session_id="rest-bash")) == 404


def test_unknown_sessions_are_404(sandbox: Sandbox) -> None:
    calls = [
        # (exec_command with an unknown id creates that session: tests/gateway/doors/rest/test_sdk_session_flows.py)
        lambda: sandbox.shell.view(id="nope"),
        lambda: sandbox.shell.kill_process(id="nope"),
        lambda: sandbox.shell.cleanup_session(session_id="nope"),
        lambda: sandbox.bash.exec(command="true", session_id="nope"),
        lambda: sandbox.bash.output(session_id="nope"),
        lambda: sandbox.bash.close_session(session_id="nope"),
    ]
    assert [status_of(call) for call in calls] == [404] * len(calls)


def test_validation_failures_are_422(sandbox: Sandbox, gateway: str) -> None:
    for route in ("/v1/shell/exec", "/v1/bash/exec"):
        response = shared_http.post(f"{gateway}{route}", json={})
        assert response.status_code == 422
        body = response.json()
        assert body["success"] is False and body["message"] == "Request data validation failed"
        assert body["errors"][0]["location"] == ["body", "command"]
    with pytest.raises(UnprocessableEntityError):
        sandbox.shell.exec_command(command="true", hard_timeout=-1)


def test_the_terminal_url_is_the_terminal_page_on_a_keyless_gateway(sandbox: Sandbox, gateway: str) -> None:
    assert sandbox.shell.get_terminal_url().data == f"{gateway}/terminal/"
    page = shared_http.get(f"{gateway}/terminal/")
    assert page.status_code == 200 and 'data-page="terminal"' in page.text
    assert shared_http.get(f"{gateway}/terminal/static/terminal.js").status_code == 200


def test_limits_and_missing_features_answer_clearly(sandbox: Sandbox) -> None:
    created = [sandbox.shell.create_session(id=f"rest-cap-{i}") for i in range(20)]
    assert len(created) == 20
    with pytest.raises(ApiError) as refused:
        sandbox.shell.create_session(id="rest-cap-20")
    assert refused.value.status_code == 429 and "limit 20" in refused.value.body["message"]
