"""The OpenAI-compatible endpoint driven by the official ``openai`` client, with the stand-in agent
CLI behind it: plain and streaming chats, response_format with validation and retries, the
``x-aicodebox-*`` headers, ephemeral workspaces and client disconnects."""

from __future__ import annotations

import json
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.mcp_mode.helpers import FIXED_CLAUDE, SCHEMA, StandIn, group_members, wait_gone

from .helpers import serve_api

JSON_SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}


@pytest.fixture
def client(api: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{api}/openai/v1", api_key="unused", max_retries=0, timeout=30) as client:
        yield client


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_models(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["sonnet", "opus"]
    assert client.models.retrieve("opus").owned_by == "aicodebox"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")


def test_plain_chat_in_an_ephemeral_workspace(client: openai.OpenAI, stand_in: StandIn) -> None:
    reply = client.chat.completions.create(
        model="opus",
        messages=[
            {"role": "system", "content": "Be terse."},
            {"role": "developer", "content": "Answer in English."},
            {"role": "user", "content": "ANSWER hello there"},
        ],
    )
    assert reply.object == "chat.completion" and reply.id.startswith("chatcmpl-")
    assert reply.model == "opus"
    (choice,) = reply.choices
    assert (choice.message.role, choice.message.content, choice.finish_reason) == (
        "assistant",
        "hello there",
        "stop",
    )
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (
        11,
        7,
        18,
    )
    (call,) = stand_in.calls()
    assert call["argv"] == [
        *FIXED_CLAUDE,
        "--model",
        "opus",
        "--system-prompt",
        "Be terse.\n\nAnswer in English.",
    ]
    assert call["stdin"] == "ANSWER hello there"  # one user message: the prompt verbatim
    cwd = Path(call["cwd"])
    assert cwd.parent.name == "aicodebox" and not cwd.exists()  # removed afterwards


def test_multi_turn_chat_becomes_a_transcript(client: openai.OpenAI, stand_in: StandIn) -> None:
    client.chat.completions.create(
        model="sonnet",
        messages=[
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": [{"type": "text", "text": "And 3+3?"}]},
        ],
    )
    prompt = stand_in.calls()[0]["stdin"]
    assert prompt == (
        "Continue this conversation. Respond to the last user message.\n\n"
        "[USER]\nWhat is 2+2?\n\n[ASSISTANT]\n4\n\n[USER]\nAnd 3+3?"
    )


def test_model_names(client: openai.OpenAI, stand_in: StandIn) -> None:
    client.chat.completions.create(model="anthropic/opus", messages=user("a"))
    client.chat.completions.create(model="claude", messages=user("b"))  # the adapter's name: its default
    with pytest.raises(openai.NotFoundError) as refused:
        client.chat.completions.create(model="gpt-9", messages=user("c"))
    assert "AICODEBOX_AVAILABLE_MODELS offers: sonnet, opus" in refused.value.body["message"]
    first, second = stand_in.calls()
    assert first["argv"][-2:] == ["--model", "opus"]
    assert "--model" not in second["argv"]


def test_streaming(client: openai.OpenAI, stand_in: StandIn) -> None:
    chunks = list(
        client.chat.completions.create(
            model="opus",
            messages=user("ANSWER streamed words"),
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed words"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 18
    assert len({c.id for c in chunks}) == 1
    assert not Path(stand_in.calls()[0]["cwd"]).exists()


def test_streaming_failure_is_reported_in_the_stream(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="opus", messages=user("EXIT 2"), stream=True))
    last = chunks[-1].choices[0]
    assert last.finish_reason == "error"
    assert last.delta.content.startswith("[error: agent exited with code 2: stand-in agent failed on purpose")


def test_response_format_json_schema(client: openai.OpenAI, stand_in: StandIn) -> None:
    reply = client.chat.completions.create(
        model="opus",
        messages=user('ANSWER not json\nRETRY_ANSWER ```json\\n{"answer": 7}\\n```'),
        response_format=JSON_SCHEMA_FORMAT,
    )
    assert json.loads(reply.choices[0].message.content) == {"answer": 7}
    assert [a["parse_error"] is None for a in reply.model_extra["aicodebox_attempts"]] == [False, True]
    assert reply.usage.total_tokens == 36
    assert "could not be parsed as JSON" in stand_in.calls()[1]["stdin"]

    obj = client.chat.completions.create(
        model="opus", messages=user('ANSWER {"any": "object"}'), response_format={"type": "json_object"}
    )
    assert json.loads(obj.choices[0].message.content) == {"any": "object"}

    streamed = list(
        client.chat.completions.create(
            model="opus",
            messages=user('ANSWER {"answer": 1}'),
            response_format=JSON_SCHEMA_FORMAT,
            stream=True,
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == '{"answer": 1}'
    assert streamed[-1].choices[0].finish_reason == "stop"


def test_response_format_failures(make_api_settings) -> None:
    with serve_api(make_api_settings(AICODEBOX_JSON_RETRIES="1")) as api:
        client = openai.OpenAI(base_url=f"{api}/openai/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.UnprocessableEntityError) as invalid:
            client.chat.completions.create(
                model="opus", messages=user("ANSWER never json"), response_format=JSON_SCHEMA_FORMAT
            )
        assert invalid.value.body["message"].startswith("json_schema validation failed after 1 retries: ")
        with pytest.raises(openai.InternalServerError) as crashed:
            client.chat.completions.create(model="opus", messages=user("EXIT 3"), response_format=JSON_SCHEMA_FORMAT)
        assert crashed.value.body["message"].startswith("agent exited with code 3: ")
        with pytest.raises(openai.BadRequestError) as bad_format:
            client.chat.completions.create(
                model="opus", messages=user("x"), response_format={"type": "json_schema", "json_schema": {}}
            )
        assert "response_format.json_schema.schema" in bad_format.value.body["message"]


def test_aicodebox_headers(client: openai.OpenAI, stand_in: StandIn, workspace: Path) -> None:
    reply = client.chat.completions.with_raw_response.create(
        model="opus",
        messages=user('ANSWER {"answer": 3}'),
        extra_headers={
            "x-aicodebox-workspace": "proj",
            "x-aicodebox-continue": "yes",
            "x-aicodebox-append-system-prompt": "Prefer tabs.",
            "x-aicodebox-json-schema": json.dumps(SCHEMA),
        },
    )
    assert json.loads(reply.parse().choices[0].message.content) == {"answer": 3}
    assert reply.headers["x-aicodebox-session-id"] == "continued-session"
    client.chat.completions.create(
        model="opus",
        messages=user("again"),
        extra_headers={"x-aicodebox-workspace": "proj", "x-aicodebox-resume": "s-1"},
    )
    first, second = stand_in.calls()
    assert first["argv"] == [
        *FIXED_CLAUDE,
        "--model", "opus",
        "--append-system-prompt", "Prefer tabs.",
        "--continue",
        "--json-schema", json.dumps(SCHEMA, separators=(",", ":")),
    ]  # fmt: skip
    assert first["cwd"] == str(workspace / "proj") and (workspace / "proj").is_dir()  # a caller's workspace stays
    assert second["argv"][-2:] == ["--resume", "s-1"]


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-aicodebox-continue", "maybe"),
        ("x-aicodebox-json-schema", "[1, 2]"),
        ("x-aicodebox-json-schema", "{not json"),
        ("x-aicodebox-timeout-seconds", "soon"),
        ("x-aicodebox-timeout-seconds", "-1"),
        ("x-aicodebox-workspace", "../elsewhere"),
    ],
)
def test_malformed_headers_are_400(client: openai.OpenAI, stand_in: StandIn, header: str, value: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="opus", messages=user("x"), extra_headers={header: value})
    assert header in refused.value.body["message"]
    assert stand_in.calls() == []


def test_timeout_header_kills_the_agent(client: openai.OpenAI, stand_in: StandIn) -> None:
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(
            model="opus",
            messages=user("CHILD\nSLEEP 30"),
            extra_headers={"x-aicodebox-timeout-seconds": "2.5"},
        )
    assert failed.value.body["message"].startswith("agent timed out: timeout after 2.5s")
    (call,) = stand_in.calls()
    wait_gone([call["pid"], call["child"]])


def test_ephemeral_workspace_is_private_while_in_use(client: openai.OpenAI, stand_in: StandIn) -> None:
    thread = threading.Thread(
        target=lambda: client.chat.completions.create(model="opus", messages=user("SLEEP 1\nANSWER ok"))
    )
    thread.start()
    (call,) = stand_in.wait_for_calls(1)
    mode = stat.S_IMODE(Path(call["cwd"]).stat().st_mode)
    thread.join(20)
    assert mode == 0o700
    assert not Path(call["cwd"]).exists()


def test_disconnects_kill_the_agent(api: str, client: openai.OpenAI, stand_in: StandIn) -> None:
    url = f"{api}/openai/v1/chat/completions"
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url, json={"model": "opus", "messages": user("CHILD\nSLEEP 30")}, timeout=1.5)
    body = {"model": "opus", "messages": user("CHILD\nSLEEP 30"), "stream": True}
    with httpx.stream("POST", url, json=body, timeout=10) as response:
        lines = response.iter_lines()  # kept: dropping the iterator would close the connection
        first = next(lines)
        assert first.startswith("data: ") and json.loads(first[6:])["choices"][0]["delta"]["role"] == "assistant"
        stand_in.wait_for_calls(2)
    calls = stand_in.calls()
    wait_gone([pid for call in calls for pid in (call["pid"], call["child"])])
    assert all(group_members(call["pgid"]) == [] for call in calls)
    deadline = time.monotonic() + 5
    while any(Path(call["cwd"]).exists() for call in calls) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(Path(call["cwd"]).exists() for call in calls)
