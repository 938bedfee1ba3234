"""The session flows the agent-sandbox SDK documents, through the SDK: ``shell.exec_command`` with a new
``id`` makes that session; ``jupyter.execute_code`` without ``session_id`` answers one that keeps
state; ``nodejs.update_session`` (PATCH) changes a REPL's idle limit and working directory."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.core.api_error import ApiError
from agent_sandbox.types.response_node_js_update_session_response import ResponseNodeJsUpdateSessionResponse

from tests.support import shared_http


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_exec_with_a_new_id_creates_that_session(client: Sandbox, tmp_path: Path) -> None:
    first = client.shell.exec_command(command=f"cd {tmp_path} && export MARK=kept", id="new-id")
    assert first.data.session_id == "new-id" and first.data.status == "completed"
    again = client.shell.exec_command(command="echo $MARK; pwd", id="new-id")
    assert again.data.output.split() == ["kept", str(tmp_path)]
    assert "new-id" in client.shell.list_sessions().data.sessions


def test_exec_with_an_invalid_new_id_is_refused(client: Sandbox, gateway: str) -> None:
    before = set(client.shell.list_sessions().data.sessions)
    response = shared_http.post(f"{gateway}/v1/shell/exec", json={"command": "true", "id": "bad id!"}, timeout=30)
    assert 400 <= response.status_code < 500 and response.json()["success"] is False
    assert set(client.shell.list_sessions().data.sessions) == before


def test_jupyter_without_session_id_answers_a_session_that_keeps_state(client: Sandbox) -> None:
    first = client.jupyter.execute_code(code="x = 41")
    assert first.data.session_id
    second = client.jupyter.execute_code(code="print(x + 1)", session_id=first.data.session_id)
    assert second.data.outputs[0].text == "42\n"
    assert first.data.session_id in client.jupyter.list_sessions().data.sessions


def test_implicit_sessions_make_room_instead_of_429(client: Sandbox) -> None:
    """Sessions made by execute_code without an id give way (oldest first) past the session limit;
    named sessions are never evicted."""
    client.jupyter.create_session(session_id="named")
    client.jupyter.execute_code(code="z = 'named'", session_id="named")
    ids = [client.jupyter.execute_code(code=f"n = {number}").data.session_id for number in range(22)]
    assert len(set(ids)) == 22
    sessions = client.jupyter.list_sessions().data.sessions
    assert "named" in sessions and ids[-1] in sessions and ids[0] not in sessions
    assert client.jupyter.execute_code(code="print(z)", session_id="named").data.outputs[0].text == "named\n"


def test_the_async_jupyter_client_too(gateway: str) -> None:
    async def scenario() -> str:
        client = AsyncSandbox(base_url=gateway, timeout=60)
        first = await client.jupyter.execute_code(code="y = 'state'")
        second = await client.jupyter.execute_code(code="print(y)", session_id=first.data.session_id)
        return second.data.outputs[0].text

    assert asyncio.run(scenario()) == "state\n"


def test_nodejs_update_session_changes_idle_limit_and_cwd(client: Sandbox, tmp_path: Path) -> None:
    created = client.nodejs.create_session(session_id="repl-1")
    assert created.data.session_id == "repl-1"
    client.nodejs.execute_code(code="globalThis.kept = 7", session_id="repl-1")
    updated = client.nodejs.update_session(session_id="repl-1", max_idle_time=120, cwd=str(tmp_path))
    assert isinstance(updated, ResponseNodeJsUpdateSessionResponse)
    assert updated.data.updated is True
    assert updated.data.session.cwd == str(tmp_path)
    assert updated.data.session.max_idle_time == 120_000  # seconds in, milliseconds out (as create)
    ran = client.nodejs.execute_code(code="console.log(process.cwd(), kept)", session_id="repl-1")
    assert ran.data.stdout == f"{tmp_path} 7\n"
    assert client.nodejs.get_session(session_id="repl-1").data.session.max_idle_time == 120_000


@pytest.mark.parametrize(
    ("session", "body", "status"),
    [
        ("nobody", {"max_idle_time": 10}, 404),
        ("repl-2", {"cwd": "/no/such/dir"}, 400),
        ("repl-2", {"max_idle_time": -1}, 400),
        ("repl-2", {"max_idle_time": "soon"}, 422),
    ],
)
def test_bad_updates_change_nothing(client: Sandbox, gateway: str, session: str, body: dict, status: int) -> None:
    client.nodejs.create_session(session_id="repl-2")
    before = client.nodejs.get_session(session_id="repl-2").data.session
    response = shared_http.patch(f"{gateway}/v1/nodejs/sessions/{session}", json=body, timeout=30)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False
    after = client.nodejs.get_session(session_id="repl-2").data.session
    assert (after.cwd, after.max_idle_time) == (before.cwd, before.max_idle_time)
    with pytest.raises(ApiError):
        client.nodejs.update_session(session_id="nobody", max_idle_time=5)
