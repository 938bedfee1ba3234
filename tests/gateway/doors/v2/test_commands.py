"""``/v2/commands`` driven as aiod's documentation describes it (start/migration.md, quick-start):
a plain httpx client against a real gateway on 127.0.0.1, no agentbox helpers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app

KEY = "v2-commands-test-key"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def data(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is True and set(body) >= {"success", "message", "data", "hint"}, body
    return body["data"]


def refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False and body["message"] and "data" in body, body
    return body


@pytest.fixture
def client(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=30) as http:
        yield http


@pytest.fixture
def limited(gateway_settings: GatewaySettings) -> Iterator[httpx.Client]:
    """A gateway allowing two running commands and keeping finished ones only briefly and small."""
    settings = replace(gateway_settings, command_max_running=2, command_retain_chars=3000)
    with serve_app(build_app(settings)) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield http


def wait_done(client: httpx.Client, command_id: str, seconds: float = 60) -> dict[str, Any]:
    """Long-poll the command until it ends (each round waits for new output or the end), bounded in
    time, not in rounds: a round with output already there answers at once, and on a loaded machine
    the end can come many such rounds after the last output."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = data(client.get(f"/v2/commands/{command_id}", params={"wait": 2}))
        if state["status"] != "running":
            return state
    raise AssertionError(f"command {command_id} did not end")


def test_a_sync_run_answers_each_stream_and_reads_again_by_offset(client: httpx.Client) -> None:
    run = data(client.post("/v2/commands", json={"command": "printf hello; echo oops >&2; exit 3"}))
    assert run["stdout"] == "hello" and run["stderr"] == "oops\n"
    assert run["status"] == "completed" and run["exit_code"] == 3 and run["session_id"] is None
    assert run["stdout_offset"] == 5 and run["stderr_offset"] == 5 and run["finished_at"]
    again = data(client.get(f"/v2/commands/{run['command_id']}", params={"stdout_offset": 2, "stderr_offset": 4}))
    assert again["stdout"] == "llo" and again["stderr"] == "\n" and again["exit_code"] == 3
    listed = data(client.get("/v2/commands"))
    assert run["command_id"] in [c["command_id"] for c in listed]


def test_quick_start_call(client: httpx.Client) -> None:
    """The quick start's ``sb.post("/v2/commands", command="printf hello")["stdout"]``."""
    assert data(client.post("/v2/commands", json={"command": "printf hello"}))["stdout"] == "hello"


def ndjson_lines(response: httpx.Response) -> Iterator[dict[str, Any]]:
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
    for line in response.iter_lines():
        if line:
            yield json.loads(line)


@pytest.mark.parametrize("ask", ["accept", "body"])
def test_ndjson_arrives_while_the_command_runs(client: httpx.Client, tmp_path: Path, ask: str) -> None:
    flag = tmp_path / "flag"
    command = f"echo first; while [ ! -e {flag} ]; do sleep 0.02; done; echo second >&2"
    body: dict[str, Any] = {"command": command, "hard_timeout": 20}
    headers = {"Accept": "application/x-ndjson"} if ask == "accept" else {}
    if ask == "body":
        body["stream"] = True
    with client.stream("POST", "/v2/commands", json=body, headers=headers) as response:
        lines = ndjson_lines(response)
        started = next(lines)
        assert started["type"] == "started" and started["status"] == "running"
        first = next(lines)
        assert first == {"type": "stdout", "offset": 0, "data": "first\n"}
        # The first output line is here and the command still waits for the flag: it is running.
        assert data(client.get(f"/v2/commands/{started['command_id']}"))["status"] == "running"
        flag.touch()
        rest = list(lines)
    assert rest[0] == {"type": "stderr", "offset": 0, "data": "second\n"}
    result = rest[-1]
    assert result["type"] == "result" and result["status"] == "completed" and result["exit_code"] == 0
    assert result["stdout_offset"] == 6 and result["stderr_offset"] == 7 and len(rest) == 2


def test_hard_timeout_ends_in_timed_out_with_the_output_so_far(client: httpx.Client) -> None:
    started = time.monotonic()
    run = data(
        client.post("/v2/commands", json={"command": "echo partial; echo half >&2; sleep 60", "hard_timeout": 1})
    )
    assert time.monotonic() - started < 15
    assert run["status"] == "timed_out" and run["stdout"] == "partial\n" and run["stderr"].startswith("half\n")
    assert run["exit_code"] == 137
    with client.stream(
        "POST", "/v2/commands", json={"command": "echo streamed; sleep 60", "hard_timeout": 1, "stream": True}
    ) as response:
        lines = list(ndjson_lines(response))
    # bash reports the killed job on stderr ("... Killed sleep 60"): what the shell printed, kept.
    assert [line["type"] for line in lines if line["type"] != "stderr"] == ["started", "stdout", "result"]
    assert lines[1]["data"] == "streamed\n" and lines[-1]["status"] == "timed_out"
    assert lines[-1]["stdout_offset"] == len("streamed\n") and lines[-1]["exit_code"] == 137


def test_async_command_takes_stdin_and_is_read_by_offset(client: httpx.Client) -> None:
    script = 'read line; echo "got $line"; read rest; echo "then $rest"'
    run = data(client.post("/v2/commands", json={"command": script, "mode": "async", "hard_timeout": 30}))
    command_id = run["command_id"]
    assert run["status"] == "running" and run["exit_code"] is None
    wrote = data(client.post(f"/v2/commands/{command_id}/stdin", json={"data": "one\n"}))
    assert wrote["written"] == 4 and wrote["command_id"] == command_id
    seen = ""
    for _ in range(20):
        state = data(client.get(f"/v2/commands/{command_id}", params={"wait": 2}))
        seen = state["stdout"]
        if seen:
            break
    assert seen == "got one\n"
    offset = state["stdout_offset"]
    data(client.post(f"/v2/commands/{command_id}/stdin", json={"data": "two", "eof": True}))
    done = wait_done(client, command_id)
    assert done["status"] == "completed" and done["exit_code"] == 0
    tail = data(client.get(f"/v2/commands/{command_id}", params={"stdout_offset": offset}))
    assert tail["stdout"] == "then two\n" and tail["stdout_offset"] == offset + len("then two\n")
    ended = refused(client.post(f"/v2/commands/{command_id}/stdin", json={"data": "late"}), 400)
    assert "no command is running" in ended["message"]


def test_a_sync_command_reads_no_stdin(client: httpx.Client) -> None:
    run = data(client.post("/v2/commands", json={"command": "cat; echo end", "hard_timeout": 10}))
    assert run["stdout"] == "end\n" and run["status"] == "completed"


def test_kill_stops_a_running_command(client: httpx.Client) -> None:
    run = data(client.post("/v2/commands", json={"command": "echo up; sleep 60", "mode": "async"}))
    killed = data(client.post(f"/v2/commands/{run['command_id']}/kill"))
    assert killed["status"] == "killed" and killed["exit_code"] == 137 and killed["signal"] == "SIGKILL"
    termed = data(client.post("/v2/commands", json={"command": "sleep 60", "mode": "async"}))
    answer = data(client.post(f"/v2/commands/{termed['command_id']}/kill", json={"signal": "SIGTERM"}))
    assert answer["signal"] == "SIGTERM"
    assert wait_done(client, termed["command_id"])["status"] == "killed"
    again = data(client.post(f"/v2/commands/{run['command_id']}/kill"))  # a finished one stays as it ended
    assert again["status"] == "killed" and again["stdout"] == "up\n"


def test_shells_and_args(client: httpx.Client) -> None:
    bash = data(client.post("/v2/commands", json={"command": 'echo "$1-$2"', "args": ["a b", "c"]}))
    assert bash["stdout"] == "a b-c\n" and bash["shell"] == "bash" and bash["args"] == ["a b", "c"]
    sh = data(
        client.post("/v2/commands", json={"command": 'echo "$0 $1"; echo $BASH_VERSION', "shell": "sh", "args": ["x"]})
    )
    assert sh["stdout"].startswith("sh x\n")
    none = data(
        client.post("/v2/commands", json={"command": "printf", "shell": "none", "args": ["%s|", "a;b", "$HOME"]})
    )
    assert none["stdout"] == "a;b|$HOME|" and none["exit_code"] == 0
    missing = data(client.post("/v2/commands", json={"command": "echo hi", "shell": "none"}))
    assert missing["exit_code"] == 127 and missing["stdout"] == ""


def test_cwd_and_env(client: httpx.Client, tmp_path: Path) -> None:
    run = data(
        client.post("/v2/commands", json={"command": "pwd; echo $FOO", "cwd": str(tmp_path), "env": {"FOO": "bar"}})
    )
    assert run["stdout"] == f"{tmp_path}\nbar\n" and run["cwd"] == str(tmp_path)
    body = refused(client.post("/v2/commands", json={"command": "pwd", "cwd": str(tmp_path / "nope")}), 400)
    assert "directory does not exist" in body["message"]


def test_sessions_keep_state_and_env_and_are_the_mcp_tools_sessions(client: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    session = data(
        client.post(
            "/v2/commands/sessions", json={"session_id": "v2s", "cwd": str(tmp_path), "env": {"GREETING": "hi"}}
        )
    )
    assert session["session_id"] == "v2s" and session["cwd"] == str(tmp_path) and session["env_keys"] == ["GREETING"]
    data(client.post("/v2/commands", json={"command": "cd sub; export LATER=1", "session_id": "v2s"}))
    run = data(client.post("/v2/commands", json={"command": "pwd; echo $GREETING $LATER", "session_id": "v2s"}))
    assert run["stdout"] == f"{tmp_path / 'sub'}\nhi 1\n" and run["session_id"] == "v2s"
    own = data(
        client.post(
            "/v2/commands", json={"command": "echo ${GREETING:-none}", "session_id": "v2s", "env": {"GREETING": "own"}}
        )
    )
    assert own["stdout"] == "own\n"
    # The MCP tool runs in the very same session: its directory and its env.
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "echo $GREETING; pwd", "session_id": "v2s"}},
    }
    result = client.post("/mcp", json=call, headers=MCP_HEADERS).json()["result"]
    assert json.loads(result["content"][0]["text"])["output"] == f"hi\n{tmp_path / 'sub'}\n"
    assert data(client.get("/v2/commands/sessions/v2s"))["command_count"] == 4
    assert "v2s" in [s["session_id"] for s in data(client.get("/v2/commands/sessions"))]
    closed = data(client.delete("/v2/commands/sessions/v2s"))
    assert closed == {"session_id": "v2s", "closed": True}
    refused(client.get("/v2/commands/sessions/v2s"), 404)
    refused(client.post("/v2/commands", json={"command": "true", "session_id": "v2s"}), 404)
    refused(client.delete("/v2/commands/sessions/v2s"), 404)


def test_a_busy_session_is_a_conflict(client: httpx.Client) -> None:
    data(client.post("/v2/commands/sessions", json={"session_id": "busy"}))
    run = data(client.post("/v2/commands", json={"command": "sleep 60", "session_id": "busy", "mode": "async"}))
    refused(client.post("/v2/commands", json={"command": "true", "session_id": "busy"}), 409)
    data(client.post(f"/v2/commands/{run['command_id']}/kill"))
    assert data(client.post("/v2/commands", json={"command": "echo free", "session_id": "busy"}))["stdout"] == "free\n"
    refused(client.post("/v2/commands/sessions", json={"session_id": "busy"}), 409)


def test_running_commands_are_limited_with_429(limited: httpx.Client) -> None:
    first = data(limited.post("/v2/commands", json={"command": "sleep 60", "mode": "async"}))
    data(limited.post("/v2/commands", json={"command": "sleep 60", "mode": "async"}))
    body = refused(limited.post("/v2/commands", json={"command": "echo third"}), 429)
    assert "too many commands running (limit 2)" in body["message"] and "AIO_COMMAND_MAX_RUNNING" in body["hint"]
    data(limited.post(f"/v2/commands/{first['command_id']}/kill"))
    assert data(limited.post("/v2/commands", json={"command": "echo third"}))["stdout"] == "third\n"


def test_finished_output_is_kept_within_the_size_bound(limited: httpx.Client) -> None:
    """3000 characters kept: each finished command counts 1024 plus its output, so a third pushes
    the oldest out (404), while the newer ones stay readable."""
    ids = [data(limited.post("/v2/commands", json={"command": f"echo {n}"}))["command_id"] for n in range(3)]
    for _ in range(100):  # the registry counts a command among the finished just after its answer
        if limited.get(f"/v2/commands/{ids[0]}").status_code == 404:
            break
        time.sleep(0.02)
    body = refused(limited.get(f"/v2/commands/{ids[0]}"), 404)
    assert "no longer kept" in body["message"]
    assert data(limited.get(f"/v2/commands/{ids[2]}"))["stdout"] == "2\n"


def test_finished_output_is_kept_for_a_bounded_time(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, command_retain_seconds=0.3))) as url:
        with httpx.Client(base_url=url, timeout=30) as http:
            command_id = data(http.post("/v2/commands", json={"command": "echo brief"}))["command_id"]
            assert data(http.get(f"/v2/commands/{command_id}"))["stdout"] == "brief\n"
            deadline = time.monotonic() + 10
            while http.get(f"/v2/commands/{command_id}").status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            refused(http.get(f"/v2/commands/{command_id}"), 404)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "command"),
        ({"command": ""}, "command"),
        ({"command": "true", "shell": "zsh"}, "shell"),
        ({"command": "true", "hard_timeout": 0}, "hard_timeout"),
        ({"command": "true", "mode": "later"}, "mode"),
        ({"command": "true", "args": "a b"}, "args"),
        ({"command": "true", "env": {"A": 1}}, "env"),
        ({"command": "true", "stream": True, "mode": "async"}, ""),
    ],
)
def test_bad_input_is_422_with_the_envelope(client: httpx.Client, body: dict[str, Any], field: str) -> None:
    answer = refused(client.post("/v2/commands", json=body), 422)
    assert answer["message"] == "Request data validation failed"
    assert answer["errors"] and all({"location", "message", "type"} <= set(e) for e in answer["errors"])
    assert any(field in e["location"] for e in answer["errors"]) or not field
    assert data(client.get("/v2/commands")) == []  # nothing was started


def test_unknown_and_refused_requests(client: httpx.Client) -> None:
    for method, path in [("GET", "/v2/commands/nope"), ("POST", "/v2/commands/nope/kill")]:
        assert "unknown command 'nope'" in refused(client.request(method, path), 404)["message"]
    refused(client.post("/v2/commands/nope/stdin", json={"data": "x"}), 404)
    refused(client.post("/v2/commands/nope/stdin", json={}), 422)
    refused(client.get("/v2/commands/nope", params={"stdout_offset": -1}), 422)
    refused(client.post("/v2/commands", json={"command": "true", "session_id": "absent"}), 404)
    assert (
        "invalid environment variable name"
        in refused(client.post("/v2/commands", json={"command": "true", "env": {"1X": "y"}}), 400)["message"]
    )
    refused(client.post("/v2/commands/sessions", json={"session_id": "bad id"}), 400)
    refused(client.put("/v2/commands"), 405)


def test_auth_host_and_origin_rules_are_those_of_v1(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as url:
        assert refused(httpx.post(f"{url}/v2/commands", json={"command": "echo hi"}), 401)
        refused(httpx.get(f"{url}/v2/commands/sessions"), 401)
        refused(httpx.get(f"{url}/v2/commands/x", headers={"Authorization": "Bearer wrong"}), 401)
        ok = httpx.post(f"{url}/v2/commands", json={"command": "echo hi"}, headers={"x-api-key": KEY})
        assert data(ok)["stdout"] == "hi\n"
        foreign = {"Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"}
        refused(httpx.post(f"{url}/v2/commands", json={"command": "echo hi"}, headers=foreign), 403)
    with serve_app(build_app(gateway_settings)) as url:
        rebound = httpx.post(f"{url}/v2/commands", json={"command": "echo hi"}, headers={"Host": "evil.example"})
        refused(rebound, 421)


def test_body_cap_is_that_of_v1(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, max_json_body_bytes=1000))) as url:
        body = refused(httpx.post(f"{url}/v2/commands", json={"command": "echo " + "x" * 2000}), 413)
        assert "AIO_MAX_JSON_BODY_BYTES" in body["hint"]
