"""The image's ``/v2/commands``, ``/v2/sandbox`` and ``AIO_API_SURFACE=v2``, driven with plain httpx
as aiod's documentation describes them. The gateway in the image is non-root and non-dumpable,
unlike the bare gateway of tests/gateway: commands run as the sandbox user, and an async command's
stdin is a FIFO that user must be able to open."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import docker
import httpx
import pytest

from tests.support.v2 import v2_data

from .conftest import API_KEY
from .dockerbox import Box, running_box

pytestmark = pytest.mark.docker


@pytest.fixture
def client(box: Box) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=box.url(8091), headers=headers, timeout=60) as http:
        yield http


def test_a_command_runs_as_the_sandbox_user_with_its_streams_apart(client: httpx.Client) -> None:
    run = v2_data(client.post("/v2/commands", json={"command": "id -un; echo err >&2; exit 4"}))
    assert (run["stdout"], run["stderr"], run["exit_code"], run["status"]) == ("sandbox\n", "err\n", 4, "completed")
    again = v2_data(client.get(f"/v2/commands/{run['command_id']}", params={"stdout_offset": 3}))
    assert again["stdout"] == "dbox\n"
    none = v2_data(client.post("/v2/commands", json={"command": "printf", "shell": "none", "args": ["%s", "$HOME"]}))
    assert none["stdout"] == "$HOME"


def test_ndjson_and_hard_timeout(client: httpx.Client) -> None:
    body = {"command": "echo one; sleep 30", "hard_timeout": 2}
    with client.stream("POST", "/v2/commands", json=body, headers={"Accept": "application/x-ndjson"}) as response:
        lines = [json.loads(line) for line in response.iter_lines() if line]
    types = [line["type"] for line in lines]
    # bash may report the killed job on stderr ("Killed") before the result
    assert types[:2] == ["started", "stdout"] and types[-1] == "result" and set(types[2:-1]) <= {"stderr"}, types
    assert lines[1]["data"] == "one\n" and lines[-1]["status"] == "timed_out"


def test_async_command_reads_stdin_and_is_killed(client: httpx.Client) -> None:
    run = v2_data(client.post("/v2/commands", json={"command": 'read -r x; echo "got $x"', "mode": "async"}))
    v2_data(client.post(f"/v2/commands/{run['command_id']}/stdin", json={"data": "ada\n"}))
    for _ in range(20):
        state = v2_data(client.get(f"/v2/commands/{run['command_id']}", params={"wait": 2}))
        if state["status"] != "running":
            break
    assert (state["stdout"], state["exit_code"]) == ("got ada\n", 0)
    slow = v2_data(client.post("/v2/commands", json={"command": "sleep 60", "mode": "async"}))
    assert v2_data(client.post(f"/v2/commands/{slow['command_id']}/kill"))["status"] == "killed"


def test_session_env_is_shared_with_the_mcp_tool(client: httpx.Client) -> None:
    v2_data(client.post("/v2/commands/sessions", json={"session_id": "img-v2", "env": {"COLOR": "teal"}}))
    assert v2_data(client.post("/v2/commands", json={"command": "echo $COLOR", "session_id": "img-v2"}))["stdout"] == (
        "teal\n"
    )
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sandbox_execute_bash", "arguments": {"cmd": "echo $COLOR", "session_id": "img-v2"}},
    }
    answer = client.post("/mcp", json=call, headers={"Accept": "application/json, text/event-stream"}).json()
    assert json.loads(answer["result"]["content"][0]["text"])["output"] == "teal\n"
    assert v2_data(client.delete("/v2/commands/sessions/img-v2"))["closed"] is True


def test_sandbox_describes_the_image(client: httpx.Client) -> None:
    info = v2_data(client.get("/v2/sandbox"))
    assert (info["user"], info["home_dir"]) == ("sandbox", "/home/sandbox")
    assert info["capabilities"]["exec"]["pty"]["available"] is True
    assert v2_data(client.get("/v2/sandbox/packages", params={"lang": "python"}))
    assert httpx.get(client.base_url.join("/v2/openapi.json")).status_code == 200  # public, as in aiod


def test_the_browser_alias_answers_as_v1_does(client: httpx.Client) -> None:
    """``/v2/browser/*`` is ``/v1/browser/*``'s handlers: the same tabs once the browser serves."""
    deadline = time.monotonic() + 60
    while (tabs := client.get("/v2/browser/tabs")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert v2_data(tabs) == v2_data(client.get("/v1/browser/tabs"))
    assert client.get("/v2/browser/page/html").status_code == 404  # page automation is CDP's in /v2


def test_v2_surface_serves_only_v2_and_mcp(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    env = {"AIO_API_SURFACE": "v2", "DISABLE_BROWSER": "true"}
    with running_box(docker_client, agentbox_image, env) as box:
        assert httpx.post(box.url(8091, "/v1/shell/exec"), json={"command": "true"}).status_code == 404
        assert httpx.get(box.url(8091, "/v1/openapi.json")).status_code == 404
        assert v2_data(httpx.post(box.url(8091, "/v2/commands"), json={"command": "echo hi"}))["stdout"] == "hi\n"
        assert v2_data(httpx.get(box.url(8091, "/v2/sandbox")))["api_surfaces"] == ["v2"]
