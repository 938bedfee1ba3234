"""The example child images under images/examples/ build FROM the image and do what they claim."""

from __future__ import annotations

import time

import docker
import pytest

from tests.support.jsonrpc import call_tool, list_tool_names, tool_json, tool_text

from .dockerbox import REPO, build_on, mcp_payload, mcp_post, running_box

pytestmark = pytest.mark.docker

EXAMPLES = REPO / "images/examples"


@pytest.fixture(scope="module")
def hello_image(docker_client: docker.DockerClient, agentbox_image: str) -> str:
    return build_on(
        docker_client, agentbox_image, folder=EXAMPLES / "child-mcp-server", tag="agentbox-child-mcp-server:e2e"
    )


@pytest.fixture(scope="module")
def claude_image(docker_client: docker.DockerClient, agentbox_image: str) -> str:
    return build_on(docker_client, agentbox_image, folder=EXAMPLES / "child-claude", tag="agentbox-child-claude:e2e")


def test_child_mcp_server_tools_join_the_gateway_with_its_prefix(
    docker_client: docker.DockerClient, hello_image: str
) -> None:
    user_servers = '{"gone":{"url":"http://127.0.0.1:18111/mcp","prefix":"gone"}}'
    with running_box(docker_client, hello_image, {"EXTRA_MCP_SERVERS": user_servers}) as box:
        url = box.url(8091, "/mcp")
        names: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = list_tool_names(url)
            if "hello_greet" in names and "browser_navigate" in names:
                break
            time.sleep(0.5)
        assert {"hello_greet", "hello_word_count"} <= set(names), names
        assert "browser_navigate" in names, "the image's browser entry must survive the child's registration"
        assert not any(name.startswith("gone_") for name in names)
        assert names.index("browser_navigate") < names.index("hello_greet")

        greeting = call_tool(url, "hello_greet", {"name": "agentbox"})
        assert greeting["isError"] is False
        assert tool_text(greeting) == "Hello, agentbox! (from the hello MCP server)"
        counted = call_tool(url, "hello_word_count", {"text": "one two three"})
        assert tool_json(counted) == {"words": 3, "characters": 13}
        box.wait_state("hello-mcp", "RUNNING")
        _, user = box.exec("ps -o user= -p $(supervisorctl pid hello-mcp)")
        assert user.strip() == "sandbox"


def test_child_claude_runs_the_cli_and_reports_missing_credentials(
    docker_client: docker.DockerClient, claude_image: str
) -> None:
    with running_box(docker_client, claude_image, {"DISABLE_BROWSER": "true"}) as box:
        code, version = box.exec("claude --version", user="sandbox")
        assert code == 0 and "Claude Code" in version, version

        box.wait_http(8081, "/healthz")
        health = box.wait_http(8081, "/healthz").json()
        assert health["adapter"] == "claude"
        url = box.url(8081, "/")
        tools = mcp_payload(mcp_post(url, "tools/list"))["result"]["tools"]
        assert {tool["name"] for tool in tools} == {
            "run_prompt",
            "list_files",
            "read_file",
            "write_file",
            "delete_file",
        }
        answer = mcp_payload(
            mcp_post(url, "tools/call", {"name": "run_prompt", "arguments": {"prompt": "Say hello."}}, timeout=120)
        )
        result = answer["result"]
        assert result["isError"] is True, result
        message = result["content"][0]["text"].lower()
        assert "log" in message or "api key" in message or "credential" in message, message
