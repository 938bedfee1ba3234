"""``run_prompt`` with the CLI adapters, against a stand-in executable that prints the CLIs'
documented output and records how it was called: argument mapping, json_schema retries, failures,
the workspace lock, timeouts and client disconnects."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from .helpers import (
    FIXED_CLAUDE,
    MCP_HEADERS,
    SCHEMA,
    StandIn,
    group_members,
    mcp_client,
    serve_settings,
    tool_text,
    wait_gone,
)

pytestmark = pytest.mark.anyio

FIXED_CODEX = ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]


def sleeping_run_call(request_id: int) -> dict[str, Any]:
    """A raw ``run_prompt`` call whose agent starts a child and sleeps 30 s: one for a test to cut short."""
    params = {"name": "run_prompt", "arguments": {"prompt": "CHILD\nSLEEP 30"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def run(url: str, **arguments):
    async with mcp_client(url) as client:
        return await client.call_tool("run_prompt", arguments)


async def test_claude_argument_mapping(make_settings, stand_in: StandIn, workspace: Path) -> None:
    prompt = "Fix the bug; `rm -rf /` is text, not a command\nANSWER all fixed"
    with serve_settings(make_settings(AICODEBOX_AVAILABLE_MODELS="sonnet,opus")) as base:
        outcome = await run(
            f"{base}/mcp",
            prompt=prompt,
            workspace="proj/a",
            model="opus",
            system_prompt="You are terse.",
            append_system_prompt="Use British spelling.",
            no_continue=False,
            thinking="high",
            json_schema=None,
        )
        assert not outcome.is_error, tool_text(outcome)
        assert tool_text(outcome) == "all fixed"
        assert outcome.structured_content["session_id"] == "continued-session"
        assert outcome.structured_content["exit_code"] == 0
        assert outcome.structured_content["attempts"] == [
            {
                "index": 0,
                "exit_code": 0,
                "parse_error": None,
                "usage": {"input_tokens": 11, "output_tokens": 7},
            }
        ]
        resumed = await run(f"{base}/", prompt="again", resume="sess-42", no_continue=False)
        assert resumed.structured_content["session_id"] == "sess-42"
        await run(f"{base}/mcp", prompt="defaults")
    first, second, third = stand_in.calls()
    assert first["argv"] == [
        *FIXED_CLAUDE,
        "--model",
        "opus",
        "--system-prompt",
        "You are terse.",
        "--append-system-prompt",
        "Use British spelling.",
        "--continue",
        "--effort",
        "high",
    ]
    assert first["stdin"] == prompt
    assert not any("rm -rf" in arg for arg in first["argv"])  # the prompt never travels in argv
    assert first["cwd"] == str(workspace / "proj" / "a")
    assert first["pgid"] == first["pid"]  # its own process group
    assert second["argv"] == [*FIXED_CLAUDE, "--resume", "sess-42"]  # resume wins over continue
    assert third["argv"] == FIXED_CLAUDE  # fresh session: no session flag
    assert third["cwd"] == str(workspace)


async def test_claude_json_schema_flag(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        outcome = await run(f"{base}/mcp", prompt='ANSWER {"answer": 42}', json_schema=SCHEMA)
    assert not outcome.is_error and json.loads(tool_text(outcome)) == {"answer": 42}
    assert outcome.structured_content["json"] == {"answer": 42}
    (call,) = stand_in.calls()
    assert call["argv"] == [*FIXED_CLAUDE, "--json-schema", json.dumps(SCHEMA, separators=(",", ":"))]


async def test_json_schema_as_a_json_string(make_settings, stand_in: StandIn, workspace: Path) -> None:
    """Issue 28: the published ``json_schema`` is a JSON string (what strict clients send); the
    answer is as structured as with an object, an empty string means no schema, and a string that
    is not a JSON object is refused before any agent starts."""
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        outcome = await run(url, prompt='ANSWER {"answer": 42}', json_schema=json.dumps(SCHEMA))
        assert not outcome.is_error, tool_text(outcome)
        assert json.loads(tool_text(outcome)) == {"answer": 42}
        assert outcome.structured_content["json"] == {"answer": 42}
        free = await run(url, prompt="ANSWER free text", json_schema="")
        assert tool_text(free) == "free text" and "json" not in free.structured_content
        (structured, unstructured) = stand_in.calls()
        assert structured["argv"] == [*FIXED_CLAUDE, "--json-schema", json.dumps(SCHEMA, separators=(",", ":"))]
        assert unstructured["argv"] == FIXED_CLAUDE
        for bad, message in [
            ("{not json", "json_schema is not valid JSON: "),
            ("[1, 2]", "json_schema must be a JSON object (a JSON Schema)"),
            ('{"type": "nonsense"}', "json_schema is not a valid JSON Schema"),
        ]:
            refused = await run(url, prompt="hello", json_schema=bad, workspace="never-made")
            assert refused.is_error and tool_text(refused).startswith(message), tool_text(refused)
    assert len(stand_in.calls()) == 2
    assert not (workspace / "never-made").exists()


async def test_codex_argument_mapping(make_settings, stand_in: StandIn, workspace: Path) -> None:
    system = 'Say "hi" \\ then\nstop = [x]'
    with serve_settings(make_settings(AICODEBOX_ADAPTER="codex")) as base:
        url = f"{base}/mcp"
        full = await run(
            url,
            prompt='ANSWER {"answer": 1}',
            model="gpt-5-codex",
            system_prompt=system,
            append_system_prompt="Be brief.",
            thinking="xhigh",
            json_schema=SCHEMA,
            workspace="cx",
        )
        assert not full.is_error, tool_text(full)
        assert full.structured_content["json"] == {"answer": 1}
        fresh = await run(url, prompt="hello")
        assert tool_text(fresh) == "echo: hello"
        assert len(fresh.structured_content["session_id"]) == 32
        resumed = await run(url, prompt="more", resume="thread-9")
        assert resumed.structured_content["session_id"] == "thread-9"
        continued = await run(url, prompt="more", no_continue=False)
        assert continued.structured_content["session_id"] == "last-thread"
    calls = stand_in.calls()
    schema_file = calls[0]["argv"][calls[0]["argv"].index("--output-schema") + 1]
    assert calls[0]["argv"] == [
        *FIXED_CODEX,
        "--model",
        "gpt-5-codex",
        "-c",
        f"instructions={json.dumps(system)}",
        "-c",
        'developer_instructions="Be brief."',
        "-c",
        'model_reasoning_effort="xhigh"',
        "--output-schema",
        schema_file,
        "-",
    ]
    assert calls[0]["output_schema"] == SCHEMA
    assert not await anyio.Path(schema_file).exists()  # the temporary schema file is cleaned up
    assert calls[0]["cwd"] == str(workspace / "cx") and calls[0]["stdin"] == 'ANSWER {"answer": 1}'
    assert calls[1]["argv"] == [*FIXED_CODEX, "-"]
    assert calls[2]["argv"] == [*FIXED_CODEX, "resume", "thread-9", "-"]
    assert calls[3]["argv"] == [*FIXED_CODEX, "resume", "--last", "-"]


async def test_json_schema_retries_in_a_fresh_session(make_settings, stand_in: StandIn) -> None:
    prompt = 'Compute it\nANSWER The answer is forty-two.\nRETRY_ANSWER {"answer": 42}'
    with serve_settings(make_settings()) as base:
        outcome = await run(f"{base}/mcp", prompt=prompt, json_schema=SCHEMA, no_continue=False, resume="s-1")
    assert not outcome.is_error, tool_text(outcome)
    assert json.loads(tool_text(outcome)) == {"answer": 42}
    attempts = outcome.structured_content["attempts"]
    assert [a["index"] for a in attempts] == [0, 1]
    assert attempts[0]["parse_error"].startswith("not valid JSON") and attempts[1]["parse_error"] is None
    first, retry = stand_in.calls()
    assert "--resume" in first["argv"]
    assert "--resume" not in retry["argv"] and "--continue" not in retry["argv"]
    retry_prompt = retry["stdin"]
    assert retry_prompt.startswith("Your previous response to the task below could not be parsed as JSON.")
    for part in (
        "─── Original task ───",
        prompt,
        "─── Your previous (invalid) response ───",
        "The answer is forty-two.",
        "─── Parse / validation error ───",
        attempts[0]["parse_error"],
        "─── Required schema ───",
        json.dumps(SCHEMA, indent=2),
    ):
        assert part in retry_prompt


async def test_json_schema_tolerates_fences_and_chatter(make_settings, stand_in: StandIn) -> None:
    answer = 'Sure! Here it is:\\n```json\\n{"answer": 7}\\n```\\nAnything else?'
    with serve_settings(make_settings()) as base:
        outcome = await run(f"{base}/mcp", prompt=f"ANSWER {answer}", json_schema=SCHEMA)
    assert not outcome.is_error and outcome.structured_content["json"] == {"answer": 7}
    assert len(stand_in.calls()) == 1


async def test_json_schema_failing_every_attempt(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings(AICODEBOX_JSON_RETRIES="2")) as base:
        outcome = await run(f"{base}/mcp", prompt='ANSWER {"answer": "many"}', json_schema=SCHEMA)
    assert outcome.is_error
    assert tool_text(outcome) == (
        "json_schema validation failed after 2 retries: does not match the schema: at $.answer: "
        "'many' is not of type 'integer'"
    )
    assert len(outcome.structured_content["attempts"]) == 3 and len(stand_in.calls()) == 3


async def test_agent_failures_are_error_results(make_settings, stand_in: StandIn, tmp_path: Path) -> None:
    with serve_settings(make_settings()) as base:
        crashed = await run(f"{base}/mcp", prompt="EXIT 3", json_schema=SCHEMA)
        assert crashed.is_error
        assert tool_text(crashed) == "agent exited with code 3: stand-in agent failed on purpose"
        assert crashed.structured_content["exit_code"] == 3
        assert len(crashed.structured_content["attempts"]) == 1  # a crash is never retried
        # the crash released the lock: the next run in the same workspace starts
        reported = await run(f"{base}/mcp", prompt="ERROR_RESULT\nANSWER quota exceeded")
        assert reported.is_error and "quota exceeded" in tool_text(reported)
        assert len(stand_in.calls()) == 2
    with serve_settings(make_settings(AICODEBOX_AGENT_BINARY=str(tmp_path / "no-such-agent"))) as base:
        missing = await run(f"{base}/mcp", prompt="hello")
    assert missing.is_error
    assert tool_text(missing) == f"agent exited with code 127: binary not found: {tmp_path / 'no-such-agent'}"
    assert missing.structured_content["exit_code"] == 127


async def test_refused_requests_start_nothing(make_settings, stand_in: StandIn, workspace: Path) -> None:
    with serve_settings(make_settings(AICODEBOX_AVAILABLE_MODELS="sonnet, opus")) as base:
        url = f"{base}/mcp"
        cases = [
            (
                {"model": "gpt-4", "workspace": "new-a"},
                "model 'gpt-4' is not available; AICODEBOX_AVAILABLE_MODELS offers: sonnet, opus",
            ),
            ({"workspace": "../elsewhere"}, "invalid workspace subpath: '../elsewhere'"),
            ({"workspace": "a/../../b"}, "invalid workspace subpath: 'a/../../b'"),
            ({"workspace": "/etc"}, "invalid workspace subpath: '/etc'"),
            (
                {"thinking": "ultra", "workspace": "new-b"},
                "thinking 'ultra' is not supported by claude; use one of low, medium, high, max",
            ),
            (
                {"json_schema": {"type": "nonsense"}, "workspace": "new-c"},
                "json_schema is not a valid JSON Schema",
            ),
            ({"prompt": "   ", "workspace": "new-d"}, "prompt must not be empty"),
            ({"prompt": None}, "prompt is required"),  # null means not given
            ({"no_continue": "yes"}, "no_continue must be of type boolean"),
        ]
        for extra, message in cases:
            outcome = await run(url, **{"prompt": "hello", **extra})
            assert outcome.is_error, extra
            assert tool_text(outcome).startswith(message), (extra, tool_text(outcome))
    assert stand_in.calls() == []
    assert os.listdir(workspace) == []  # no workspace directory was created either


async def test_busy_workspace_is_refused_at_once(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        results: dict[str, object] = {}

        async def first() -> None:
            results["first"] = await run(url, prompt="SLEEP 2\nANSWER first done", workspace="shared")

        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
            started = time.monotonic()
            busy = await run(url, prompt="ANSWER second", workspace="shared")
            elapsed = time.monotonic() - started
            assert busy.is_error and tool_text(busy).endswith("shared is busy with another run")
            assert elapsed < 1.0
            assert len(stand_in.calls()) == 1  # the second agent was never started
        assert tool_text(results["first"]) == "first done"
        after = await run(url, prompt="ANSWER third", workspace="shared")
        assert not after.is_error and tool_text(after) == "third"


async def test_different_workspaces_run_in_parallel(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        texts: dict[str, str] = {}

        async def one(name: str) -> None:
            texts[name] = tool_text(await run(url, prompt=f"SLEEP 1.5\nANSWER {name}", workspace=name))

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for name in ("left", "right", ""):
                tg.start_soon(one, name)
        elapsed = time.monotonic() - started
    assert texts == {"left": "left", "right": "right", "": ""}
    assert elapsed < 2.9, elapsed  # three 1.5 s runs overlapped


async def test_timeout_kills_the_process_group_and_releases_the_lock(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings(AICODEBOX_RUN_TIMEOUT="1")) as base:
        url = f"{base}/mcp"
        started = time.monotonic()
        outcome = await run(url, prompt="CHILD\nSLEEP 30")
        assert time.monotonic() - started < 8
        assert outcome.is_error and tool_text(outcome) == "agent timed out: timeout after 1s"
        assert outcome.structured_content["exit_code"] == 124
        (call,) = stand_in.calls()
        await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])
        assert group_members(call["pgid"]) == []
        again = await run(url, prompt="ANSWER still usable")
        assert tool_text(again) == "still usable"


async def test_client_disconnect_kills_the_agent_and_releases_the_lock(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        body = sleeping_run_call(7)
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream("POST", url, json=body, headers=MCP_HEADERS) as response:
                assert response.status_code == 200
                (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        # leaving the block closed the connection mid-run
        await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])
        assert group_members(call["pgid"]) == []
        again = await run(url, prompt="ANSWER lock was released")
        assert not again.is_error and tool_text(again) == "lock was released"


async def test_notifications_cancelled_kills_the_agent(make_settings, stand_in: StandIn) -> None:
    """A handshake-era client cancels with ``notifications/cancelled`` on a POST of its own while the
    call's stream stays open: the run stops, its agent is killed and the call answers at once."""
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        body = sleeping_run_call(41)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 41, "reason": "t"}}
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream("POST", url, json=body, headers=MCP_HEADERS) as response:
                assert response.status_code == 200
                (call,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
                started = time.monotonic()
                assert (await http.post(url, json=cancel, headers=MCP_HEADERS)).status_code == 202
                answer = "".join([chunk async for chunk in response.aiter_text()])
                assert time.monotonic() - started < 8
        assert '"isError":true' in answer.replace(" ", "") and "cancelled by the client" in answer
        await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])
        assert group_members(call["pgid"]) == []
        again = await run(url, prompt="ANSWER free after a cancel")
        assert tool_text(again) == "free after a cancel"


async def test_server_stays_responsive_during_a_run(make_settings, stand_in: StandIn, workspace: Path) -> None:
    """Health checks and file reads are answered while a run is in progress, not after it (ordering,
    not timing: the run outlasts them by far)."""
    (workspace / "f.txt").write_text("data")
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        ended = anyio.Event()

        async def long_run() -> None:
            await run(url, prompt="SLEEP 20\nANSWER slow")
            ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_run)
            await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
            async with httpx.AsyncClient() as http, mcp_client(url) as client:
                for _ in range(10):
                    health = await http.get(f"{base}/healthz")
                    assert health.status_code == 200
                    read = await client.call_tool("read_file", {"path": "f.txt"})
                    assert tool_text(read) == "data"
                    assert not ended.is_set()
                    await anyio.sleep(0.1)
                assert len(stand_in.calls()) == 1
            tg.cancel_scope.cancel()


async def test_sdk_client_cancelling_a_call_kills_the_agent(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp") as client:
            with anyio.move_on_after(10) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "run_prompt", {"prompt": "CHILD\nSLEEP 30"})
                    await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
                    tg.cancel_scope.cancel()
            assert not scope.cancelled_caught
        (call,) = stand_in.calls()
        await anyio.to_thread.run_sync(wait_gone, [call["pid"], call["child"]])
        again = await run(f"{base}/mcp", prompt="ANSWER free again")
        assert tool_text(again) == "free again"
