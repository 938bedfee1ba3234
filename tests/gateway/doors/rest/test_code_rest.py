"""``/v1/code``, ``/v1/jupyter`` and ``/v1/nodejs`` through the public ``agent-sandbox`` 0.0.30 SDK,
unmodified: every answer must parse into its models (required fields present)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from agent_sandbox import Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types import (
    CodeExecuteResponse,
    JupyterExecuteResponse,
    NodeJsExecuteResponse,
    NodeJsSessionInfo,
)

from tests.support import shared_http
from tests.support.requirements import needs_program

needs_node = needs_program("node", "nodejs")


@pytest.fixture
def client(gateway: str) -> Iterator[Sandbox]:
    yield Sandbox(base_url=gateway, timeout=60)


def test_code_execute_matches_aiods_reply(client: Sandbox) -> None:
    answer = client.code.execute_code(language="python", code="print(sum([1,2,3]))")
    assert answer.success is True
    data = answer.data
    assert isinstance(data, CodeExecuteResponse)
    assert (data.language, data.status, data.code, data.exit_code) == ("python", "ok", "print(sum([1,2,3]))", 0)
    assert (data.stdout, data.stderr, data.session_id, data.traceback) == ("6\n", "", None, None)
    assert data.outputs == [{"output_type": "stream", "name": "stdout", "text": "6\n"}]


def test_code_execute_failure_and_timeout(client: Sandbox) -> None:
    failed = client.code.execute_code(language="python", code="1/0")
    assert failed.success is False and failed.message == "ZeroDivisionError: division by zero"
    assert failed.data.status == "error" and failed.data.exit_code == 1
    assert failed.data.outputs[-1]["output_type"] == "error" and failed.data.outputs[-1]["ename"] == "ZeroDivisionError"
    assert failed.data.traceback[-1] == "ZeroDivisionError: division by zero"
    stuck = client.code.execute_code(language="python", code="while True: pass", timeout=1)
    assert stuck.success is False and stuck.data.status == "timeout"
    assert client.code.execute_code(language="python", code="print('ok')").data.stdout == "ok\n"


def test_code_execute_stateful_sessions(client: Sandbox, tmp_path: Path) -> None:
    first = client.code.execute_code(language="python", code="total = 40", stateful=True, cwd=str(tmp_path))
    sid = first.data.session_id
    assert sid
    second = client.code.execute_code(language="python", code="total + 2", session_id=sid)
    assert second.data.outputs[-1]["data"] == {"text/plain": "42"} and second.data.session_id == sid
    lone = client.code.execute_code(language="python", code="print('total' in globals())")
    assert lone.data.stdout == "False\n"


@needs_node
def test_code_execute_javascript(client: Sandbox) -> None:
    answer = client.code.execute_code(language="javascript", code="console.log([1, 2].map(x => x * 2).join(','))")
    assert (answer.data.language, answer.data.stdout) == ("javascript", "2,4\n")


def test_code_info_and_refusals(client: Sandbox, gateway: str) -> None:
    languages = {info.language: info for info in client.code.get_info().data.languages}
    assert "python" in languages and languages["python"].runtime_version
    assert languages["python"].default_timeout == 30 and languages["python"].max_timeout == 900
    with pytest.raises(ApiError) as unsupported:
        client.code.execute_code(language="cobol", code="DISPLAY 'X'")
    assert unsupported.value.status_code == 400 and "python, javascript" in unsupported.value.body["message"]
    with pytest.raises(ApiError) as missing_dir:
        client.code.execute_code(language="python", code="1", cwd="/definitely/not/here")
    assert missing_dir.value.status_code == 400
    invalid = shared_http.post(f"{gateway}/v1/code/execute", json={"language": "python"})
    assert invalid.status_code == 422 and invalid.json()["success"] is False


def test_jupyter_sessions_round_trip(client: Sandbox) -> None:
    info = client.jupyter.get_info().data
    assert info.default_kernel == "python3" and "python3" in info.available_kernels and info.max_sessions == 20
    created = client.jupyter.create_session(session_id="nb-1").data
    assert (created.session_id, created.kernel_name) == ("nb-1", "python3")
    client.jupyter.execute_code(code="import math\nr = 2", session_id="nb-1")
    area = client.jupyter.execute_code(code="round(math.pi * r * r, 2)", session_id="nb-1")
    assert isinstance(area.data, JupyterExecuteResponse)
    assert area.data.status == "ok" and area.data.execution_count == 2
    assert area.data.outputs[0].output_type == "execute_result" and area.data.outputs[0].data == {"text/plain": "12.57"}
    failed = client.jupyter.execute_code(code="raise KeyError('k')", session_id="nb-1")
    assert failed.success is False and failed.data.status == "error"
    error = failed.data.outputs[-1]
    assert (error.output_type, error.ename, error.evalue) == ("error", "KeyError", "'k'")
    assert error.traceback[0] == "Traceback (most recent call last):"
    assert "nb-1" in client.jupyter.list_sessions().data.sessions
    assert client.jupyter.delete_session("nb-1").success is True
    with pytest.raises(ApiError) as gone:
        client.jupyter.delete_session("nb-1")
    assert gone.value.status_code == 404
    client.jupyter.create_session(session_id="nb-2")
    assert client.jupyter.delete_sessions().success is True
    assert client.jupyter.list_sessions().data.sessions == {}


def test_jupyter_stateless_and_kernel_names(client: Sandbox) -> None:
    answer = client.jupyter.execute_code(code="print('hi')\n1 + 1")
    assert answer.data.session_id  # a kernel session is made and named, as AIO's (issue 15)
    assert [o.output_type for o in answer.data.outputs] == ["stream", "execute_result"]
    with pytest.raises(ApiError) as bad_kernel:
        client.jupyter.execute_code(code="1", kernel_name="julia-1.9")
    assert bad_kernel.value.status_code == 400 and "available kernels" in bad_kernel.value.body["message"]


def test_jupyter_outputs_carry_every_key(gateway: str) -> None:
    """AIO's v1 shape: each output object has all nine keys, null where they do not apply."""
    answer = httpx.post(f"{gateway}/v1/jupyter/execute", json={"code": "print('hi')\n1 + 1"}, timeout=60).json()
    stream, result = answer["data"]["outputs"]
    keys = {"output_type", "name", "text", "data", "metadata", "execution_count", "ename", "evalue", "traceback"}
    assert stream.keys() == result.keys() == keys
    assert stream["text"] == "hi\n" and stream["data"] is None and stream["traceback"] is None
    assert result["data"]["text/plain"] == "2" and result["name"] is None and result["text"] is None


def test_session_limit_is_a_clear_429(client: Sandbox) -> None:
    for number in range(20):
        client.jupyter.create_session(session_id=f"cap-{number}")
    with pytest.raises(ApiError) as full:
        client.jupyter.create_session(session_id="cap-20")
    assert full.value.status_code == 429 and "session limit reached" in full.value.body["message"]
    client.jupyter.delete_sessions()
    assert client.jupyter.create_session(session_id="cap-20").success is True


@needs_node
def test_nodejs_execute_with_stdin_and_files(client: Sandbox, tmp_path: Path) -> None:
    answer = client.nodejs.execute_code(
        code="const fs = require('fs');\nconsole.log(fs.readFileSync('in.txt', 'utf8') + fs.readFileSync(0, 'utf8'))",
        stdin=" world",
        files={"in.txt": "hello"},
        cwd=str(tmp_path),
    )
    assert isinstance(answer.data, NodeJsExecuteResponse)
    assert (answer.data.status, answer.data.exit_code, answer.data.stdout) == ("ok", 0, "hello world\n")
    failed = client.nodejs.execute_code(code="throw new RangeError('out')")
    assert failed.success is False and failed.data.exit_code == 1
    assert failed.data.outputs[-1].ename == "RangeError"
    with pytest.raises(ApiError) as version:
        client.nodejs.execute_code(code="1", version="node8")
    assert version.value.status_code == 400


@needs_node
def test_nodejs_sessions_round_trip(client: Sandbox) -> None:
    info = client.nodejs.get_info().data
    assert info.node_version.startswith("v") and info.supported_languages == ["javascript"]
    created = client.nodejs.create_session(session_id="repl-1", max_idle_time=600).data
    assert created.created is True and isinstance(created.session, NodeJsSessionInfo)
    assert created.session.max_idle_time == 600_000 and created.session.state == "IDLE"
    client.nodejs.execute_code(code="const items = [1, 2, 3];", session_id="repl-1")
    summed = client.nodejs.execute_code(code="items.reduce((a, b) => a + b, 0)", session_id="repl-1")
    assert summed.data.outputs[-1].data == {"text/plain": "6"} and summed.data.session_id == "repl-1"
    assert "repl-1" in client.nodejs.list_sessions().data.sessions
    assert client.nodejs.get_session("repl-1").data.session.session_id == "repl-1"
    assert client.nodejs.delete_session("repl-1").data.deleted is True
    with pytest.raises(ApiError) as gone:
        client.nodejs.get_session("repl-1")
    assert gone.value.status_code == 404


def kill_and_wait(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists():  # reaped: the gateway has seen it die
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_lost_session_says_so_once_then_works(client: Sandbox) -> None:
    first = client.code.execute_code(language="python", code="import os\nkept = 1\nos.getpid()", stateful=True)
    sid = first.data.session_id
    kill_and_wait(int(first.data.outputs[-1]["data"]["text/plain"]))
    lost = client.code.execute_code(language="python", code="kept", session_id=sid)
    assert lost.success is False and lost.message.startswith("SessionLost: the session's interpreter was killed")
    assert lost.data.status == "error" and lost.data.outputs[-1]["ename"] == "SessionLost"
    assert client.code.execute_code(language="python", code="kept = 2\nkept", session_id=sid).success is True

    client.jupyter.create_session(session_id="nb-lost")
    pid = client.jupyter.execute_code(code="import os; os.getpid()", session_id="nb-lost").data.outputs[0].data
    kill_and_wait(int(pid["text/plain"]))
    notebook = client.jupyter.execute_code(code="1 + 1", session_id="nb-lost")
    assert notebook.success is False and notebook.data.outputs[-1].ename == "SessionLost"
    again = client.jupyter.execute_code(code="1 + 1", session_id="nb-lost").data
    assert again.status == "ok" and again.outputs[0].data == {"text/plain": "2"}
