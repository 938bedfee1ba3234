"""API mode's ``/run`` and OpenAI endpoint with hostile schemas: a ``$ref`` outside the schema (in
``jsonSchema``, ``response_format`` or a tool's ``parameters``) and a self-reference are refused
before any agent starts, and nothing is fetched."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.mcp_mode.helpers import StandIn
from tests.mcp_mode.test_schemas import Listener, listener, remote_schemas  # noqa: F401 - fixture reused

LOOP = "json_schema has a $ref cycle that never reaches a value (it would recurse forever)"


def chat(api: str, **extra: object) -> httpx.Response:
    body = {"model": "sonnet", "messages": [{"role": "user", "content": 'ANSWER {"a": 1}'}], **extra}
    return httpx.post(f"{api}/openai/v1/chat/completions", json=body, timeout=30)


def test_outside_refs_are_refused_and_never_fetched(
    api: str,
    stand_in: StandIn,
    listener: Listener,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    for schema in remote_schemas(listener.url, tmp_path):
        run = httpx.post(f"{api}/run", json={"prompt": 'ANSWER {"a": 1}', "jsonSchema": schema}, timeout=30)
        assert run.status_code == 422 and "only references inside the schema" in run.json()["detail"], schema
        answer_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        formatted = chat(api, response_format=answer_format)
        assert formatted.status_code == 400 and "only references inside" in formatted.json()["error"]["message"]
        tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
        with_tools = chat(api, tools=[tool])
        assert with_tools.status_code == 400 and "only references inside" in with_tools.json()["error"]["message"]
        assert "hunter2" not in run.text + formatted.text + with_tools.text
    assert listener.paths == [] and stand_in.calls() == []


def test_a_self_reference_is_refused_before_the_agent_runs(api: str, stand_in: StandIn) -> None:
    run = httpx.post(f"{api}/run", json={"prompt": "ANSWER {}", "jsonSchema": {"$ref": "#"}}, timeout=30)
    assert (run.status_code, run.json()) == (422, {"detail": LOOP})
    answer_format = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#"}}}
    formatted = chat(api, response_format=answer_format)
    assert formatted.status_code == 400 and formatted.json()["error"]["message"] == LOOP
    assert stand_in.calls() == []
