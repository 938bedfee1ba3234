"""compose.yaml (and the reverse-proxy override) validate with the Compose at hand (`docker compose` or
Debian's docker-compose 1.29), and `up` serves the gateway and MCP mode on 127.0.0.1."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time

import docker
import httpx
import pytest

from tests.support.requirements import missing
from tests.support.servers import free_port

from .dockerbox import REPO, compose_command, unique

pytestmark = pytest.mark.docker

PROXY_OVERRIDE = "deploy/reverse-proxy/compose.proxy.yaml"
#: Seed and image variables are dropped from the test's environment so compose sees only what we set.
PREFIXES = (
    "AIO_",
    "AICODEBOX_",
    "AGENTBOX_",
    "EXTRA_MCP_SERVERS",
    "ANTHROPIC_",
    "OPENAI_",
    "DISABLE_BROWSER",
    "LOG_FORMAT",
    "LOG_LEVEL",
    "PUBLIC_HOST",
    "PROXY_",
    "BASE_IMAGE",
    "COMPOSE_",
    "OTEL_",
)


def compose(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    command = compose_command()
    if command is None:
        missing("neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    return subprocess.run(
        [*command, *args], cwd=REPO, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )


def test_compose_files_validate(docker_client: docker.DockerClient) -> None:
    plain = compose("-f", "compose.yaml", "config", "-q")
    assert plain.returncode == 0, plain.stderr

    rendered = compose("-f", "compose.yaml", "config")
    assert rendered.returncode == 0, rendered.stderr
    for port in ("8091", "8080", "8081"):
        assert f"127.0.0.1:{port}:{port}" in rendered.stdout or "host_ip: 127.0.0.1" in rendered.stdout

    proxied = compose(
        "-f",
        "compose.yaml",
        "-f",
        PROXY_OVERRIDE,
        "config",
        env={"PUBLIC_HOST": "agent.example.com", "AIO_API_KEY": "k", "AICODEBOX_MCP_MODE_TOKEN": "t"},
    )
    assert proxied.returncode == 0, proxied.stderr
    assert "AICODEBOX_MCP_MODE_ALLOWED_HOSTS: agent.example.com" in proxied.stdout
    assert "AICODEBOX_MCP_MODE_ALLOWED_ORIGINS: https://agent.example.com" in proxied.stdout

    unnamed = compose("-f", "compose.yaml", "-f", PROXY_OVERRIDE, "config", "-q")
    assert unnamed.returncode != 0
    assert "PUBLIC_HOST" in unnamed.stderr


def test_compose_up_serves_health_and_mcp_mode(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    project = unique("agentboxe2e").replace("-", "")
    ports = {"AGENTBOX_GATEWAY_PORT": free_port(), "AGENTBOX_API_PORT": free_port(), "AGENTBOX_MCP_PORT": free_port()}
    env = {"AGENTBOX_IMAGE": agentbox_image, "DISABLE_BROWSER": "true", **{k: str(v) for k, v in ports.items()}}
    try:
        up = compose("-p", project, "-f", "compose.yaml", "up", "-d", "--no-build", env=env)
        assert up.returncode == 0, up.stderr
        gateway = f"http://127.0.0.1:{ports['AGENTBOX_GATEWAY_PORT']}/health"
        mcp_mode = f"http://127.0.0.1:{ports['AGENTBOX_MCP_PORT']}/healthz"
        deadline = time.monotonic() + 90
        states: dict[str, int] = {}
        while time.monotonic() < deadline:
            states = {}
            for url in (gateway, mcp_mode):
                try:
                    states[url] = httpx.get(url, timeout=3).status_code
                except httpx.HTTPError:
                    states[url] = 0
            if all(code == 200 for code in states.values()):
                break
            time.sleep(0.5)
        assert all(code == 200 for code in states.values()), (states, compose("-p", project, "logs").stdout[-3000:])

        containers = docker_client.containers.list(filters={"label": f"com.docker.compose.project={project}"})
        assert len(containers) == 1
        container = containers[0]
        assert container.attrs["HostConfig"]["ShmSize"] == 1024**3
        assert container.attrs["HostConfig"]["Init"] is True
        mounts = [m for m in container.attrs["Mounts"] if m["Destination"] == "/workspace"]
        assert mounts and mounts[0]["Type"] == "volume"
        bindings = container.attrs["HostConfig"]["PortBindings"]
        assert all(b[0]["HostIp"] == "127.0.0.1" for b in bindings.values()), bindings
    finally:
        compose("-p", project, "-f", "compose.yaml", "down", "-v", "--remove-orphans", env=env)


def scripts_up(*args: str, env: dict[str, str], timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """The README's first command, ``scripts/up``, as a newcomer runs it (none of our variables set)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(PREFIXES)}
    return subprocess.run(
        [str(REPO / "scripts" / "up"), *args],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_scripts_up_says_what_to_do_when_the_image_cannot_build(docker_client: docker.DockerClient) -> None:
    project = unique("agentboxe2e").replace("-", "")
    env = {"BASE_IMAGE": f"agentbox-missing-base:{project}", "COMPOSE_PROJECT_NAME": project}
    env["AGENTBOX_IMAGE"] = f"agentbox-e2e-unbuilt:{project}"
    try:
        done = scripts_up("-d", env=env, timeout=300)
        assert done.returncode != 0, done.stdout[-2000:]
        assert "images/build-base.sh" in done.stderr and "BASE_IMAGE=" in done.stderr, done.stderr[-2000:]
        assert not docker_client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"})
    finally:
        compose("-p", project, "-f", "compose.yaml", "down", "-v", "--remove-orphans", env=env)


def test_scripts_up_runs_the_stack_from_a_clone(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    """With nothing set: on a machine that reaches no registry (CI) it builds the local Debian base
    (or reuses it) and the image, then serves; ``/ready`` answers once every program serves its tools."""
    project = unique("agentboxe2e").replace("-", "")
    ports = {"AGENTBOX_GATEWAY_PORT": free_port(), "AGENTBOX_API_PORT": free_port(), "AGENTBOX_MCP_PORT": free_port()}
    tag = f"agentbox-e2e-up:{project}"
    env = {"COMPOSE_PROJECT_NAME": project, "AGENTBOX_IMAGE": tag, **{k: str(v) for k, v in ports.items()}}
    try:
        done = scripts_up("-d", env=env)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
        ready = f"http://127.0.0.1:{ports['AGENTBOX_GATEWAY_PORT']}/ready"
        deadline = time.monotonic() + 90
        status = 0
        while time.monotonic() < deadline and status != 200:
            try:
                status = httpx.get(ready, timeout=5).status_code
            except httpx.HTTPError:
                status = 0
            time.sleep(0.5)
        assert status == 200, compose("-p", project, "logs").stdout[-3000:]
    finally:
        compose("-p", project, "-f", "compose.yaml", "down", "-v", "--remove-orphans", env=env)
        with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.APIError):
            docker_client.images.remove(tag)
