"""The built-in agent (``AICODEBOX_ADAPTER=openai``) end to end through MCP, against a scripted
OpenAI-compatible server that answers with canned tool calls and final answers and records every
request it receives."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentbox_mcp_mode.settings import McpModeSettings
from tests.support.servers import free_port, serve_app

from .helpers import SCHEMA, mcp_client, serve_settings, tool_text, wait_gone

pytestmark = pytest.mark.anyio


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def final(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


class ScriptedModel:
    """An OpenAI-compatible chat-completions server replaying ``script`` (one message per request)."""

    def __init__(self, script: list[dict[str, Any] | int]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    async def completions(self, request: Request) -> JSONResponse:
        self.requests.append(await request.json())
        self.headers.append(dict(request.headers))
        step = self.script.pop(0) if self.script else final("script exhausted")
        if isinstance(step, int):
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=step)
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": self.requests[-1].get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": step,
                        "finish_reason": "tool_calls" if step.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        )

    @contextlib.contextmanager
    def serve(self) -> Iterator[str]:
        app = Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"])])
        with serve_app(app) as base:
            yield f"{base}/v1"


def agent_settings(make_settings, base_url: str, **env: str) -> McpModeSettings:
    return make_settings(
        AICODEBOX_ADAPTER="openai",
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="sk-scripted",
        AICODEBOX_AVAILABLE_MODELS="local-model,other-model",
        **env,
    )


async def run(url: str, token: str | None = None, **arguments):
    async with mcp_client(url, token=token) as client:
        return await client.call_tool("run_prompt", arguments)


async def test_agent_uses_its_tools_on_the_workspace(make_settings, workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("AICODEBOX_MCP_MODE_TOKEN", "mcp-secret")  # in the server's environment
    model = ScriptedModel(
        [
            call("write_file", {"path": "notes/hello.txt", "content": "hi from the agent\n"}, "c1"),
            call("edit", {"path": "notes/hello.txt", "old_str": "hi", "new_str": "hello"}, "c2"),
            call("shell", {"command": "cat notes/hello.txt; echo token=[$AICODEBOX_MCP_MODE_TOKEN]"}, "c3"),
            call("list", {"path": "notes"}, "c4"),
            call("read_file", {"path": "../outside.txt"}, "c5"),
            final("All done."),
        ]
    )
    with (
        model.serve() as endpoint,
        serve_settings(agent_settings(make_settings, endpoint, AICODEBOX_MCP_MODE_TOKEN="mcp-secret")) as base,
    ):
        outcome = await run(f"{base}/mcp", "mcp-secret", prompt="Write a greeting", thinking="low")
    assert not outcome.is_error, tool_text(outcome)
    assert tool_text(outcome) == "All done."
    assert (workspace / "notes" / "hello.txt").read_text() == "hello from the agent\n"
    assert len(model.requests) == 6
    first = model.requests[0]
    assert first["model"] == "local-model"  # the first of AICODEBOX_AVAILABLE_MODELS
    assert first["reasoning_effort"] == "low"
    assert {tool["function"]["name"] for tool in first["tools"]} == {
        "shell",
        "read_file",
        "write_file",
        "edit",
        "list",
    }
    assert first["messages"][0]["role"] == "system" and str(workspace) in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": "Write a greeting"}
    assert model.headers[0]["authorization"] == "Bearer sk-scripted"
    tool_results = {m["tool_call_id"]: m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"}
    assert tool_results["c1"] == "wrote 18 characters to notes/hello.txt"
    assert tool_results["c2"] == "edited notes/hello.txt"
    assert tool_results["c3"] == "exit code: 0\nhello from the agent\ntoken=[]\n"  # no secrets for the agent
    assert tool_results["c4"] == "hello.txt"
    assert tool_results["c5"] == "error: path is outside the workspace: '../outside.txt'"
    usage = outcome.structured_content["attempts"][0]["usage"]
    assert usage == {"input_tokens": 30, "output_tokens": 18}


async def test_continue_and_resume_keep_history(make_settings) -> None:
    model = ScriptedModel([final("first answer"), final("second answer"), final("unrelated"), final("fourth answer")])
    with model.serve() as endpoint, serve_settings(agent_settings(make_settings, endpoint)) as base:
        url = f"{base}/mcp"
        first = await run(url, prompt="one")
        session = first.structured_content["session_id"]
        second = await run(url, prompt="two", no_continue=False)
        assert second.structured_content["session_id"] == session
        third = await run(url, prompt="three", model="other-model")
        assert third.structured_content["session_id"] != session
        fourth = await run(url, prompt="four", resume=session)
        assert fourth.structured_content["session_id"] == session
        unknown = await run(url, prompt="five", resume="0" * 32)
        assert unknown.is_error and tool_text(unknown) == f"agent exited with code 1: session not found: {'0' * 32}"

    def conversation(request: dict[str, Any]) -> list[tuple[str, str]]:
        return [(m["role"], m["content"]) for m in request["messages"][1:]]

    assert conversation(model.requests[0]) == [("user", "one")]
    assert conversation(model.requests[1]) == [
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
    ]
    assert conversation(model.requests[2]) == [("user", "three")]
    assert model.requests[2]["model"] == "other-model"
    assert conversation(model.requests[3]) == [
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
        ("assistant", "second answer"),
        ("user", "four"),
    ]


async def test_json_schema_retry_runs_in_a_fresh_session(make_settings) -> None:
    model = ScriptedModel([final("I think the answer is five."), final('{"answer": 5}')])
    with model.serve() as endpoint, serve_settings(agent_settings(make_settings, endpoint)) as base:
        outcome = await run(f"{base}/mcp", prompt="What is 2+3?", json_schema=SCHEMA)
    assert not outcome.is_error, tool_text(outcome)
    assert json.loads(tool_text(outcome)) == {"answer": 5}
    attempts = outcome.structured_content["attempts"]
    assert len(attempts) == 2 and attempts[0]["parse_error"] and attempts[1]["parse_error"] is None
    first, retry = model.requests
    assert json.dumps(SCHEMA) in first["messages"][0]["content"]  # the schema is in the system prompt
    assert [m["role"] for m in retry["messages"]] == ["system", "user"]  # fresh: no earlier turns
    retry_prompt = retry["messages"][1]["content"]
    assert "could not be parsed as JSON" in retry_prompt and "I think the answer is five." in retry_prompt
    assert "What is 2+3?" in retry_prompt
    assert outcome.structured_content["session_id"] != ""


async def test_endpoint_failures_name_the_url(make_settings) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with serve_settings(agent_settings(make_settings, dead)) as base:
        outcome = await run(f"{base}/mcp", prompt="hello")
    assert outcome.is_error
    assert tool_text(outcome).startswith(
        f"agent exited with code 1: cannot reach OpenAI-compatible endpoint {dead}/chat/completions"
    )
    model = ScriptedModel([503])
    with model.serve() as endpoint, serve_settings(agent_settings(make_settings, endpoint)) as base:
        failed = await run(f"{base}/mcp", prompt="hello")
    assert failed.is_error
    assert tool_text(failed).startswith(f"agent exited with code 1: {endpoint}/chat/completions answered HTTP 503")


async def test_turn_limit(make_settings) -> None:
    model = ScriptedModel([call("list", {}, f"c{i}") for i in range(5)])
    with (
        model.serve() as endpoint,
        serve_settings(agent_settings(make_settings, endpoint, AICODEBOX_AGENT_MAX_TURNS="2")) as base,
    ):
        outcome = await run(f"{base}/mcp", prompt="loop forever")
    assert outcome.is_error
    assert tool_text(outcome) == ("agent exited with code 1: no final answer after 2 turns (AICODEBOX_AGENT_MAX_TURNS)")
    assert len(model.requests) == 2


async def test_timeout_kills_a_running_shell_command(make_settings, workspace: Path) -> None:
    model = ScriptedModel([call("shell", {"command": "echo $$ > shell.pid; sleep 30"}, "c1"), final("never")])
    with (
        model.serve() as endpoint,
        serve_settings(agent_settings(make_settings, endpoint, AICODEBOX_RUN_TIMEOUT="1.5")) as base,
    ):
        started = time.monotonic()
        outcome = await run(f"{base}/mcp", prompt="hang")
        assert time.monotonic() - started < 8
        assert outcome.is_error and tool_text(outcome) == "agent timed out: timeout after 1.5s"
        assert outcome.structured_content["exit_code"] == 124
        pid = int((workspace / "shell.pid").read_text())
        await anyio.to_thread.run_sync(wait_gone, [pid])
        assert len(model.requests) == 1
