"""Tool-calling passthrough on the OpenAI endpoint: the caller's functions are offered to the agent,
a ``{"tool_calls": …}`` answer comes back as ``message.tool_calls`` (validated against each
function's parameters, retried when ``tool_choice`` requires a call), and tool results travel back
in the transcript."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest

from tests.mcp_mode.helpers import StandIn

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}


def call(name: str, arguments: dict) -> str:
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


@pytest.fixture
def client(api: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{api}/openai/v1", api_key="unused", max_retries=0, timeout=30) as client:
        yield client


def test_auto_tool_call_and_result_round_trip(client: openai.OpenAI, stand_in: StandIn) -> None:
    asked = [{"role": "user", "content": f"Weather in Paris?\nANSWER {call('get_weather', {'city': 'Paris'})}"}]
    reply = client.chat.completions.create(model="opus", messages=asked, tools=[WEATHER, TIME])
    (choice,) = reply.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (tool_call,) = choice.message.tool_calls
    assert tool_call.type == "function" and tool_call.id.startswith("call_")
    assert (tool_call.function.name, json.loads(tool_call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    first = stand_in.calls()[0]
    instructions = first["argv"][first["argv"].index("--append-system-prompt") + 1]
    assert "get_weather" in instructions and "Current weather of a city" in instructions
    assert "--json-schema" not in first["argv"]  # auto without response_format: free text or a call

    client.chat.completions.create(
        model="opus",
        messages=[
            *asked,
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": tool_call.id, "content": "18 degrees and sunny"},
        ],
        tools=[WEATHER],
    )
    transcript = stand_in.calls()[1]["stdin"]
    assert f"(result of tool call {tool_call.id})\n18 degrees and sunny" in transcript
    assert "[TOOL]" in transcript and '"get_weather"' in transcript


def test_plain_answer_in_auto_mode(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="opus", messages=[{"role": "user", "content": "ANSWER hi"}], tools=[WEATHER]
    )
    assert reply.choices[0].finish_reason == "stop" and reply.choices[0].message.content == "hi"
    assert reply.choices[0].message.tool_calls is None
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    structured = client.chat.completions.create(
        model="opus",
        messages=[{"role": "user", "content": 'ANSWER {"answer": 5}'}],
        tools=[WEATHER],
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
    )
    assert json.loads(structured.choices[0].message.content) == {"answer": 5}


def test_required_call_is_validated_and_retried(client: openai.OpenAI, stand_in: StandIn) -> None:
    prompt = f"ANSWER {call('get_weather', {})}\nRETRY_ANSWER {call('get_weather', {'city': 'Rome'})}"
    reply = client.chat.completions.create(
        model="opus",
        messages=[{"role": "user", "content": prompt}],
        tools=[WEATHER],
        tool_choice="required",
    )
    (tool_call,) = reply.choices[0].message.tool_calls
    assert json.loads(tool_call.function.arguments) == {"city": "Rome"}
    assert len(reply.model_extra["aicodebox_attempts"]) == 2
    assert "--json-schema" in stand_in.calls()[0]["argv"]


def test_named_function_and_streaming(client: openai.OpenAI) -> None:
    prompt = f"ANSWER {call('get_weather', {'city': 'Oslo'})}\nRETRY_ANSWER {call('get_time', {})}"
    chunks = list(
        client.chat.completions.create(
            model="opus",
            messages=[{"role": "user", "content": prompt}],
            tools=[WEATHER, TIME],
            tool_choice={"type": "function", "function": {"name": "get_time"}},
            stream=True,
        )
    )
    deltas = [c.choices[0].delta.tool_calls for c in chunks if c.choices[0].delta.tool_calls]
    assert len(deltas) == 1 and deltas[0][0].index == 0 and deltas[0][0].function.name == "get_time"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_bad_tools_are_400(client: openai.OpenAI, stand_in: StandIn) -> None:
    for tools, choice in [
        ([{"type": "function"}], "auto"),
        ([WEATHER], {"type": "function", "function": {"name": "nope"}}),
        ([WEATHER], "sometimes"),
        (None, "required"),
    ]:
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(
                model="opus",
                messages=[{"role": "user", "content": "x"}],
                tools=tools or openai.NOT_GIVEN,
                tool_choice=choice,
            )
    assert stand_in.calls() == []
