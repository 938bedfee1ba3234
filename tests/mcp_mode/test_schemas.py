"""``json_schema`` from an untrusted caller: ``$ref`` is never fetched (a local listener receives
nothing), reference cycles are refused before the agent starts, and a catastrophic-backtracking
``pattern`` cannot stall the server (``/healthz`` stays fast, the match is stopped)."""

from __future__ import annotations

import contextlib
import http.server
import json
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from agentbox_mcp_mode.schemas import check_schema

from .helpers import StandIn, mcp_client, serve_settings, tool_text

TREE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}},
}
REDOS = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
#: Backtracks for seconds per candidate (doubling with each "a"; the unfixed server froze that long).
REDOS_ANSWER = '{"a": "' + "a" * 27 + '!"}'


class Listener:
    """A local HTTP server that records every request it gets (the SSRF target)."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.paths.append(self.path)
                body = b'{"type": "object"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()


def remote_schemas(base: str, tmp_path: Path) -> list[dict]:
    """Schemas whose ``$ref`` leads outside themselves: over HTTP, nested, and to a local file."""
    outside = tmp_path / "outside-schema.json"
    outside.write_text('{"type": "object", "properties": {"secret": {"const": "hunter2"}}}')
    return [
        {"$ref": f"{base}/latest/meta-data/iam"},
        {"type": "object", "properties": {"a": {"$ref": f"{base}/nested.json"}}},
        {"anyOf": [{"$ref": f"{base}/any.json#/x"}]},
        {"$ref": outside.as_uri()},
    ]


def test_check_schema_refuses_loops_and_outside_refs_and_keeps_recursion(tmp_path: Path) -> None:
    for schema in (
        {"$ref": "#"},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
        {"anyOf": [{"not": {"$ref": "#"}}]},
    ):
        with pytest.raises(ValueError, match="json_schema has a \\$ref cycle that never reaches a value"):
            check_schema(schema)
    for schema in remote_schemas("http://127.0.0.1:9", tmp_path):
        with pytest.raises(ValueError, match="only references inside the schema are allowed"):
            check_schema(schema)
    with pytest.raises(ValueError, match="\\$ref '#/\\$defs/missing' cannot be resolved"):
        check_schema({"$ref": "#/$defs/missing"})
    check_schema(TREE)
    check_schema({"$id": "https://example.com/root", "$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})
    check_schema({"$defs": {"n": {"$id": "num", "type": "integer"}}, "items": {"$ref": "num"}})


@pytest.mark.anyio
async def test_refs_are_never_fetched_and_nothing_starts(
    make_settings, stand_in: StandIn, listener: Listener, tmp_path: Path
) -> None:
    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp") as client:
            for schema in remote_schemas(listener.url, tmp_path):
                outcome = await client.call_tool("run_prompt", {"prompt": 'ANSWER {"a": 1}', "json_schema": schema})
                assert outcome.is_error, schema
                assert "only references inside the schema are allowed" in tool_text(outcome)
                assert "hunter2" not in tool_text(outcome)
    assert listener.paths == [] and stand_in.calls() == []


@pytest.mark.anyio
async def test_a_self_reference_is_refused_before_the_agent_runs(make_settings, stand_in: StandIn) -> None:
    with serve_settings(make_settings()) as base:
        async with mcp_client(f"{base}/mcp") as client:
            looped = await client.call_tool("run_prompt", {"prompt": "ANSWER {}", "json_schema": {"$ref": "#"}})
            assert looped.is_error and tool_text(looped) == (
                "json_schema has a $ref cycle that never reaches a value (it would recurse forever)"
            )
            assert stand_in.calls() == []
            tree = await client.call_tool(
                "run_prompt",
                {"prompt": 'ANSWER {"name": "a", "children": [{"name": "b"}]}', "json_schema": TREE},
            )
    assert not tree.is_error and tree.structured_content["json"]["children"] == [{"name": "b"}]


@pytest.mark.anyio
async def test_a_backtracking_pattern_never_stalls_the_server(make_settings, stand_in: StandIn) -> None:
    settings = make_settings(AICODEBOX_JSON_VALIDATION_TIMEOUT="2")
    with serve_settings(settings) as base:
        slowest = 0.0
        outcome = None

        async def run() -> None:
            nonlocal outcome
            async with mcp_client(f"{base}/mcp") as client:
                outcome = await client.call_tool(
                    "run_prompt", {"prompt": f"ANSWER {REDOS_ANSWER}", "json_schema": REDOS}
                )

        async with httpx.AsyncClient(timeout=5) as http, anyio.create_task_group() as tg:
            tg.start_soon(run)
            started = time.monotonic()
            while outcome is None and time.monotonic() - started < 20:
                before = time.monotonic()
                with contextlib.suppress(httpx.TimeoutException):
                    assert (await http.get(f"{base}/healthz")).status_code == 200
                slowest = max(slowest, time.monotonic() - before)
                await anyio.sleep(0.1)
    assert slowest < 1.0, f"/healthz took {slowest:.1f} s during the validation"
    assert outcome is not None and outcome.is_error
    assert "matching the answer against the schema took over 2 s" in tool_text(outcome)
    assert len(stand_in.calls()) == 1  # a stopped match is the schema's fault: no retry


def test_the_worker_runs_under_a_lower_cpu_limit_than_it_asks_for() -> None:
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (5, 5))

    done = subprocess.run(
        [sys.executable, "-I", "-m", "agentbox_mcp_mode.schema_worker", "10"],
        input=json.dumps({"text": '{"a": 1}', "schema": {"type": "object"}}),
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=low_limit,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"value": {"a": 1}, "error": None}
