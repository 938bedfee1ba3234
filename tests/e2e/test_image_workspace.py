"""The workspace lives in a volume: files survive a container restart and a new container."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.support.jsonrpc import call_tool, tool_json

from .dockerbox import LABEL, running_box, unique

pytestmark = pytest.mark.docker


@pytest.fixture
def volume(docker_client: docker.DockerClient) -> Iterator[str]:
    created = docker_client.volumes.create(unique("agentbox-e2e-workspace"), labels={LABEL: "1"})
    yield created.name
    created.remove(force=True)


def test_workspace_survives_restart_and_recreation(
    docker_client: docker.DockerClient, agentbox_image: str, volume: str
) -> None:
    mounts = {volume: {"bind": "/workspace", "mode": "rw"}}
    env = {"DISABLE_BROWSER": "true"}
    with running_box(docker_client, agentbox_image, env, volumes=mounts) as box:
        written = call_tool(
            box.url(8091, "/mcp"),
            "sandbox_file_operations",
            {"action": "write", "path": "/workspace/keep/me.txt", "content": "still here"},
        )
        assert written["isError"] is False

        box.container.restart(timeout=20)
        box.refresh_ports()
        box.wait_http(8091, "/health")
        read = call_tool(
            box.url(8091, "/mcp"), "sandbox_file_operations", {"action": "read", "path": "/workspace/keep/me.txt"}
        )
        assert tool_json(read)["content"] == "still here"

    with running_box(docker_client, agentbox_image, env, volumes=mounts) as fresh:
        listed = call_tool(
            fresh.url(8091, "/mcp"),
            "sandbox_execute_bash",
            {"cmd": "cat /workspace/keep/me.txt; echo; stat -c %U /workspace/keep/me.txt"},
        )
        assert tool_json(listed)["output"].split() == ["still", "here", "sandbox"]
