"""``POST /run`` (sync and async), ``/run/result``, ``DELETE /run/{id}`` and ``/status`` against the
stand-in agent CLI, which records how it was called."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.mcp_mode.helpers import FIXED_CLAUDE, SCHEMA, StandIn, group_members, wait_gone

from .helpers import serve_api


def run(api: str, timeout: float = 30, **body: Any) -> httpx.Response:
    return httpx.post(f"{api}/run", json=body, timeout=timeout)


def poll(api: str, run_id: str, timeout: float = 15) -> dict[str, Any]:
    """The result once the run is no longer running (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = httpx.get(f"{api}/run/result", params={"runId": run_id}).json()
        if answer["status"] != "running":
            return answer
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} still running after {timeout}s")


def test_sync_run_camel_and_snake_case(api: str, stand_in: StandIn, workspace: Path) -> None:
    answer = run(
        api,
        prompt="ANSWER done",
        workspace="proj",
        model="opus",
        systemPrompt="Be terse.",
        appendSystemPrompt="Use British spelling.",
        thinking="high",
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"runId", "workspace", "status", "exitCode", "text", "sessionId", "usage"}
    assert body["workspace"] == str(workspace / "proj")
    assert (body["status"], body["exitCode"], body["text"]) == ("completed", 0, "done")
    assert body["sessionId"] == "continued-session"  # /run continues by default
    assert body["usage"] == {"input_tokens": 11, "output_tokens": 7}

    snake = run(api, prompt="two", system_prompt="Terse.", append_system_prompt="More.", no_continue=True)
    assert snake.json()["text"] == "echo: two"
    resumed = run(api, prompt="three", resume="sess-7")
    assert resumed.json()["sessionId"] == "sess-7"

    first, second, third = stand_in.calls()
    assert first["argv"] == [
        *FIXED_CLAUDE,
        "--model", "opus",
        "--system-prompt", "Be terse.",
        "--append-system-prompt", "Use British spelling.",
        "--continue",
        "--effort", "high",
    ]  # fmt: skip
    assert first["cwd"] == str(workspace / "proj") and first["stdin"] == "ANSWER done"
    assert second["argv"] == [*FIXED_CLAUDE, "--system-prompt", "Terse.", "--append-system-prompt", "More."]
    assert second["cwd"] == str(workspace)
    assert third["argv"] == [*FIXED_CLAUDE, "--resume", "sess-7"]
    assert httpx.get(f"{api}/status").json() == {"busyWorkspaces": [], "runs": []}


def test_agent_failure_is_200_with_stderr(api: str) -> None:
    answer = run(api, prompt="EXIT 3")
    assert answer.status_code == 200
    body = answer.json()
    assert body["exitCode"] == 3 and "failed on purpose" in body["stderr"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"prompt": "x", "workspace": "../x"}, 400, "invalid workspace subpath: '../x'"),
        ({"prompt": "x", "workspace": "/etc"}, 400, "invalid workspace subpath: '/etc'"),
        ({"prompt": ""}, 422, None),
        ({"workspace": "a"}, 422, None),
        ({"prompt": "x", "model": "gpt-9"}, 422, "AICODEBOX_AVAILABLE_MODELS offers: sonnet, opus"),
        ({"prompt": "x", "thinking": "ultra"}, 422, "thinking 'ultra' is not supported by claude"),
        ({"prompt": "x", "jsonSchema": {"type": 5}}, 422, "json_schema is not a valid JSON Schema"),
        ({"prompt": "x", "timeoutSeconds": 0}, 422, None),
        ({"prompt": "x", "timeout_seconds": -1}, 422, None),
        ({"prompt": "x", "json_schema": {"type": 5}}, 422, "json_schema is not a valid JSON Schema"),
        ({"prompt": "x", "async": "soon"}, 422, None),
    ],
)
def test_refused_requests_start_nothing(
    api: str, stand_in: StandIn, workspace: Path, body: dict[str, Any], status: int, message: str | None
) -> None:
    answer = run(api, **body)
    assert answer.status_code == status, answer.text
    if message:
        assert message in answer.json()["detail"]
    assert stand_in.calls() == []
    assert not (workspace.parent / "x").exists() and list(workspace.iterdir()) == []


def test_json_schema_is_validated_and_retried(make_api_settings, stand_in: StandIn) -> None:
    with serve_api(make_api_settings(AICODEBOX_JSON_RETRIES="1")) as api:
        good = run(api, prompt='ANSWER sure: {"answer": "x"}\nRETRY_ANSWER {"answer": 42}', jsonSchema=SCHEMA)
        body = good.json()
        assert body["json"] == {"answer": 42} and body["exitCode"] == 0
        assert [a["parseError"] is None for a in body["attempts"]] == [False, True]
        assert body["usage"] == {"input_tokens": 22, "output_tokens": 14}
        assert "parseError" not in body
        retry = stand_in.calls()[1]
        assert "could not be parsed as JSON" in retry["stdin"] and "--continue" not in retry["argv"]

        bad = run(api, prompt="ANSWER never json", jsonSchema=SCHEMA).json()
        assert "json" not in bad and bad["jsonRetries"] == 1 and "not valid JSON" in bad["parseError"]
        assert len(bad["attempts"]) == 2


def test_timeout_kills_the_process_group(api: str, stand_in: StandIn) -> None:
    # 2.5 s leaves the stand-in room to start and record itself on a loaded machine before it is killed.
    body = run(api, prompt="CHILD\nSLEEP 30", timeoutSeconds=2.5).json()
    assert body["exitCode"] == 124 and "timeout after 2.5s" in body["stderr"]
    (call,) = stand_in.calls()
    wait_gone([call["pid"], call["child"]])


def test_async_run_is_polled_once(api: str, workspace: Path) -> None:
    started = run(api, prompt="SLEEP 0.5\nANSWER later", workspace="w", **{"async": True})
    assert started.status_code == 200
    body = started.json()
    assert body == {
        "runId": body["runId"],
        "workspace": str(workspace / "w"),
        "status": "running",
        "fireAndForget": False,
    }
    status = httpx.get(f"{api}/status").json()
    assert status["busyWorkspaces"] == [str(workspace / "w")]
    assert status["runs"] == [{"runId": body["runId"], "workspace": str(workspace / "w"), "status": "running"}]
    result = poll(api, body["runId"])
    assert (result["status"], result["exitCode"], result["text"]) == ("completed", 0, "later")
    gone = httpx.get(f"{api}/run/result", params={"runId": body["runId"]})
    assert gone.status_code == 404 and gone.json() == {"detail": "run not found"}
    assert httpx.get(f"{api}/run/result", params={"runId": "nope"}).status_code == 404
    assert httpx.get(f"{api}/status").json() == {"busyWorkspaces": [], "runs": []}


def test_fire_and_forget_keeps_no_result(api: str, stand_in: StandIn) -> None:
    body = run(api, prompt="ANSWER quick", fireAndForget=True).json()
    assert body["status"] == "running" and body["fireAndForget"] is True
    stand_in.wait_for_calls(1)
    deadline = time.monotonic() + 10
    while httpx.get(f"{api}/status").json()["runs"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(f"{api}/run/result", params={"runId": body["runId"]}).status_code == 404


def test_cancel_kills_the_process_group(api: str, stand_in: StandIn) -> None:
    body = run(api, prompt="CHILD\nSLEEP 30", **{"async": True}).json()
    (call,) = stand_in.wait_for_calls(1)
    started = time.monotonic()
    cancelled = httpx.delete(f"{api}/run/{body['runId']}", timeout=20)
    assert cancelled.json() == {"runId": body["runId"], "status": "cancelled"}
    assert time.monotonic() - started < 5
    wait_gone([call["pid"], call["child"]])
    assert group_members(call["pgid"]) == []
    assert poll(api, body["runId"])["status"] == "cancelled"
    assert httpx.delete(f"{api}/run/nope").status_code == 404
    assert run(api, prompt="ANSWER free").json()["text"] == "free"  # the lock was released


def test_delete_cancels_a_sync_run(api: str, stand_in: StandIn) -> None:
    answers: list[httpx.Response] = []
    waiter = threading.Thread(target=lambda: answers.append(run(api, prompt="SLEEP 30")))
    waiter.start()
    (call,) = stand_in.wait_for_calls(1)
    (listed,) = httpx.get(f"{api}/status").json()["runs"]
    httpx.delete(f"{api}/run/{listed['runId']}", timeout=20)
    waiter.join(20)
    assert answers[0].status_code == 200
    assert answers[0].json()["status"] == "cancelled"
    wait_gone([call["pid"]])


def test_sync_client_disconnect_kills_the_agent(api: str, stand_in: StandIn) -> None:
    with pytest.raises(httpx.ReadTimeout):
        run(api, prompt="CHILD\nSLEEP 30", timeout=1.5)
    (call,) = stand_in.calls()
    wait_gone([call["pid"], call["child"]])
    assert group_members(call["pgid"]) == []
    assert run(api, prompt="ANSWER free").json()["text"] == "free"
