"""aicodebox's MCP mode inside the image: standalone on 8081 with a token, and mounted in the API process
on 8080 when API mode is on (then the standalone program is not started)."""

from __future__ import annotations

import docker
import httpx
import pytest

from tests.support.builtin_tools import BUILTIN_TOOLS
from tests.support.jsonrpc import list_tool_names

from .conftest import MCP_TOKEN
from .dockerbox import Box, mcp_payload, mcp_post, running_box

pytestmark = pytest.mark.docker

MCP_MODE_TOOLS = {"run_prompt", "list_files", "read_file", "write_file", "delete_file"}


def tool_names(response: httpx.Response) -> set[str]:
    return {tool["name"] for tool in mcp_payload(response)["result"]["tools"]}


def test_standalone_mcp_mode_needs_its_token(box: Box) -> None:
    box.wait_http(8081, "/healthz")
    url = box.url(8081, "/")
    refused = mcp_post(url, "tools/list")
    assert refused.status_code == 401
    assert refused.json() == {"detail": "unauthorized"}
    gateway_key = mcp_post(url, "tools/list", headers={"Authorization": "Bearer e2e-gateway-key-3f9c1a"})
    assert gateway_key.status_code == 401

    allowed = mcp_post(url, "tools/list", headers={"Authorization": f"Bearer {MCP_TOKEN}"})
    assert tool_names(allowed) == MCP_MODE_TOOLS
    by_query = mcp_post(box.url(8081, f"/mcp?apiToken={MCP_TOKEN}"), "tools/list")
    assert tool_names(by_query) == MCP_MODE_TOOLS


def test_mcp_mode_files_land_in_the_shared_workspace(box: Box) -> None:
    headers = {"Authorization": f"Bearer {MCP_TOKEN}"}
    written = mcp_post(
        box.url(8081, "/"),
        "tools/call",
        {"name": "write_file", "arguments": {"path": "notes/e2e.txt", "content": "from mcp mode"}},
        headers=headers,
    )
    assert mcp_payload(written)["result"]["isError"] is False
    code, output = box.exec("cat /workspace/notes/e2e.txt && echo && stat -c %U /workspace/notes/e2e.txt")
    assert code == 0 and output.split("\n")[:2] == ["from mcp mode", "sandbox"], output


def test_a_foreign_host_is_refused_by_default(box: Box) -> None:
    response = mcp_post(
        box.url(8081, "/"), "tools/list", headers={"Authorization": f"Bearer {MCP_TOKEN}", "Host": "agent.example.test"}
    )
    assert response.status_code == 421


def test_api_mode_mounts_mcp_and_the_standalone_program_stays_off(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    env = {
        "AICODEBOX_API_MODE": "1",
        "AICODEBOX_MCP_MODE": "1",
        "AICODEBOX_AVAILABLE_MODELS": "model-a",
        "AICODEBOX_MCP_MODE_TOKEN": MCP_TOKEN,
        "DISABLE_BROWSER": "true",
    }
    with running_box(docker_client, agentbox_image, env) as api_box:
        api_box.wait_http(8080, "/healthz")
        states = api_box.wait_state("agent-api", "RUNNING")
        assert states["mcp-mode"] == "STOPPED"
        assert states["browser"] == "STOPPED"
        gateway_tools = list_tool_names(api_box.url(8091, "/mcp"))
        assert gateway_tools == BUILTIN_TOOLS, "DISABLE_BROWSER=true must also leave the browser unregistered"
        for path in ("/mcp/", "/mcp"):
            url = api_box.url(8080, path)
            assert mcp_post(url, "tools/list").status_code == 401
            assert (
                tool_names(mcp_post(url, "tools/list", headers={"Authorization": f"Bearer {MCP_TOKEN}"}))
                == MCP_MODE_TOOLS
            )


def test_api_mode_without_models_fails_alone(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    """agent-api refuses to start without AICODEBOX_AVAILABLE_MODELS; the gateway keeps serving."""
    with running_box(docker_client, agentbox_image, {"AICODEBOX_API_MODE": "1", "DISABLE_BROWSER": "1"}) as api_box:
        api_box.wait_state("agent-api", "FATAL")
        assert httpx.get(api_box.url(8091, "/health"), timeout=10).status_code == 200
        assert "AICODEBOX_AVAILABLE_MODELS" in api_box.logs()
