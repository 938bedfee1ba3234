"""API mode's ``/run`` and OpenAI endpoint with hostile schemas: a ``$ref`` outside the schema (in
``jsonSchema``, ``response_format`` or a tool's ``parameters``) and a self-reference are refused
before any agent starts, nothing is fetched, and checking a huge schema never stalls the server."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import httpx

from tests.mcp_mode.helpers import StandIn
from tests.mcp_mode.test_schemas import Listener, listener, remote_schemas  # noqa: F401 - fixture reused

from .helpers import serve_api

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


def test_checking_a_huge_schema_never_stalls_the_server(make_api_settings, stand_in: StandIn) -> None:
    # about 2.4 MB: ten seconds of checking in one thread
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string", "pattern": "^a+$"} for i in range(50_000)}}
    slowest, answers = 0.0, []
    with serve_api(make_api_settings(AICODEBOX_JSON_VALIDATION_TIMEOUT="2")) as base:
        body = {"prompt": "ANSWER {}", "jsonSchema": huge}
        sender = threading.Thread(target=lambda: answers.append(httpx.post(f"{base}/run", json=body, timeout=60)))
        sender.start()
        started = time.monotonic()
        while sender.is_alive() and time.monotonic() - started < 30:
            before = time.monotonic()
            with contextlib.suppress(httpx.TimeoutException):
                httpx.get(f"{base}/healthz", timeout=5)
            slowest = max(slowest, time.monotonic() - before)
            time.sleep(0.1)
        sender.join(30)
    # checking it takes ~10 s, all on the event loop before; what stays there is parsing the body
    assert slowest < 2.5, f"/healthz took {slowest:.1f} s while the schema was checked"
    (answer,) = answers
    assert answer.status_code == 422
    assert answer.json() == {"detail": "checking the schema took over 2 s"}
    assert stand_in.calls() == []
