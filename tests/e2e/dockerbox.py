"""Building and running agentbox images for the end-to-end tests, through docker-py only.

Containers are reached ONLY through ports published on 127.0.0.1 (random host ports read back from the
engine), never through a container's own IP address. Every container, network and volume made here
carries the ``agentbox-e2e`` label so a crashed run's leftovers can be recognised and removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import httpx
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from tests.support.jsonrpc import call_tool, tool_json, tool_text

REPO = Path(__file__).resolve().parents[2]
#: Set AGENTBOX_E2E_LABEL to give parallel runs on one engine their own leftovers to clean up.
LABEL = os.environ.get("AGENTBOX_E2E_LABEL", "agentbox-e2e")
#: Ports every agentbox container publishes (gateway, API mode, MCP mode).
AGENTBOX_PORTS = (8091, 8080, 8081)
READY_TIMEOUT = 90.0


class BuildFailed(RuntimeError):
    """An image build failed; the message carries the tail of the build log."""


def build_image(
    client: docker.DockerClient, *, path: Path, dockerfile: str, tag: str, buildargs: Mapping[str, str] | None = None
) -> str:
    """Build ``tag`` with the engine's builder (cache on), raising BuildFailed with the log's tail."""
    log: list[str] = []
    stream = client.api.build(
        path=str(path),
        dockerfile=dockerfile,
        tag=tag,
        buildargs=dict(buildargs or {}),
        rm=True,
        forcerm=True,
        decode=True,
    )
    for chunk in stream:
        if "stream" in chunk:
            log.append(chunk["stream"].rstrip("\n"))
        if "error" in chunk:
            tail = "\n".join(line for line in log[-40:] if line.strip())
            raise BuildFailed(f"building {tag} from {path / dockerfile} failed: {chunk['error']}\n{tail}")
    client.images.get(tag)  # raises when the build produced nothing
    return tag


def build_on(client: docker.DockerClient, base: str, *, folder: Path, tag: str) -> str:
    """Build ``folder``'s Dockerfile FROM ``base`` (its ``BASE_IMAGE`` build argument), as the example
    child images and deploy/reverse-proxy are meant to be built."""
    return build_image(client, path=folder, dockerfile="Dockerfile", tag=tag, buildargs={"BASE_IMAGE": base})


def write_in_box(box: Box, auth: dict[str, str], path: str, content: str) -> None:
    """Write ``content`` to ``path`` in the container with ``sandbox_file_operations``, as an agent does."""
    written = call_tool(
        box.url(8091, "/mcp"),
        "sandbox_file_operations",
        {"action": "write", "path": path, "content": content},
        headers=auth,
    )
    assert written["isError"] is False, tool_text(written)


def start_in_box(box: Box, auth: dict[str, str], command: str, ready_url: str) -> None:
    """Start ``command`` in the container, detached as an agent starts a dev server, and wait (10 s at
    the most) until ``ready_url`` answers inside it."""
    ready = f"for i in $(seq 100); do curl -fs -o /dev/null {ready_url} && echo serving && break; sleep 0.1; done"
    serve = call_tool(
        box.url(8091, "/mcp"),
        "sandbox_execute_bash",
        {"cmd": f"(setsid nohup {command} &); {ready}", "timeout": 30},
        headers=auth,
    )
    assert "serving" in tool_json(serve)["output"], tool_text(serve)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Box:
    """A running container and the 127.0.0.1 ports its container ports are published on."""

    container: Container
    published: tuple[int, ...]
    ports: dict[int, int] = field(default_factory=dict)

    def refresh_ports(self, timeout: float = 20.0) -> None:
        """Read the host ports the engine assigned (they change when the container restarts)."""
        deadline = time.monotonic() + timeout
        while True:
            self.container.reload()
            mapping = self.container.attrs["NetworkSettings"]["Ports"] or {}
            ports = {}
            for port in self.published:
                bindings = mapping.get(f"{port}/tcp") or []
                host = [b for b in bindings if b.get("HostIp") in ("127.0.0.1", "")]
                if host and host[0].get("HostPort"):
                    ports[port] = int(host[0]["HostPort"])
            if len(ports) == len(self.published):
                self.ports = ports
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"ports of {self.container.name} were not published: {mapping}\n{self.logs()}")
            time.sleep(0.1)

    def url(self, port: int = 8091, path: str = "") -> str:
        return f"http://127.0.0.1:{self.ports[port]}{path}"

    def exec(self, command: str, user: str = "root", timeout: float = 60.0) -> tuple[int, str]:
        """Run ``command`` with bash inside the container (docker exec), bounded by ``timeout``."""
        result = self.container.exec_run(["timeout", str(int(timeout)), "bash", "-c", command], user=user)
        return result.exit_code, result.output.decode(errors="replace")

    def logs(self, tail: int = 200) -> str:
        with contextlib.suppress(APIError, NotFound):
            return self.container.logs(tail=tail).decode(errors="replace")
        return "(no logs)"

    def program_pid(self, program: str) -> int:
        code, output = self.exec(f"supervisorctl pid {program}")
        assert code == 0 and output.strip().isdigit() and int(output) > 0, f"{program}: {output}\n{self.logs()}"
        return int(output)

    def program_states(self) -> dict[str, str]:
        _, output = self.exec("supervisorctl status")
        return {line.split()[0]: line.split()[1] for line in output.splitlines() if len(line.split()) > 1}

    def wait_state(self, program: str, state: str, timeout: float = 60.0) -> dict[str, str]:
        """supervisorctl status until ``program`` is in ``state``; returns every program's state."""
        deadline = time.monotonic() + timeout
        states = self.program_states()
        while states.get(program) != state and time.monotonic() < deadline:
            time.sleep(0.3)
            states = self.program_states()
        assert states.get(program) == state, f"{program} is not {state}: {states}\n{self.logs()}"
        return states

    def wait_http(
        self,
        port: int,
        path: str,
        expect: int = 200,
        timeout: float = READY_TIMEOUT,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        deadline = time.monotonic() + timeout
        last: Any = "no answer"
        while time.monotonic() < deadline:
            try:
                response = httpx.get(self.url(port, path), headers=dict(headers or {}), timeout=3)
                if response.status_code == expect:
                    return response
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            except httpx.HTTPError as exc:
                last = repr(exc)
            self.container.reload()
            if self.container.status in ("exited", "dead"):
                break
            time.sleep(0.2)
        raise TimeoutError(f"{path} on container port {port} not {expect} after {timeout}s: {last}\n{self.logs()}")

    def remove(self) -> None:
        with contextlib.suppress(APIError, NotFound):
            self.container.remove(force=True, v=True)


def start_box(
    client: docker.DockerClient,
    image: str,
    env: Mapping[str, str] | None = None,
    *,
    published: tuple[int, ...] = AGENTBOX_PORTS,
    wait_health: bool = True,
    **run_args: Any,
) -> Box:
    """``docker run`` the image with the ports published on 127.0.0.1 (random host ports)."""
    container = client.containers.run(
        image,
        detach=True,
        name=unique("agentbox-e2e"),
        environment=dict(env or {}),
        ports={f"{port}/tcp": ("127.0.0.1", None) for port in published},
        shm_size="1g",
        labels={LABEL: "1"},
        **run_args,
    )
    box = Box(container, published)
    try:
        box.refresh_ports()
        if wait_health and 8091 in published:
            box.wait_http(8091, "/health")
    except BaseException:
        box.remove()
        raise
    return box


@contextlib.contextmanager
def running_box(
    client: docker.DockerClient, image: str, env: Mapping[str, str] | None = None, **kwargs: Any
) -> Iterator[Box]:
    box = start_box(client, image, env, **kwargs)
    try:
        yield box
    finally:
        box.remove()


def remove_leftovers(client: docker.DockerClient) -> None:
    """Remove containers, networks and volumes a previous, interrupted e2e run left behind."""
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        with contextlib.suppress(APIError, NotFound):
            container.remove(force=True, v=True)
    for volume in client.volumes.list(filters={"label": LABEL}):
        with contextlib.suppress(APIError, NotFound):
            volume.remove(force=True)


def mcp_post(
    url: str,
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> httpx.Response:
    """One JSON-RPC request as a streamable-HTTP MCP client sends it (both Accept types)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = dict(params)
    return httpx.post(
        url,
        json=body,
        timeout=timeout,
        headers={"Accept": "application/json, text/event-stream", **dict(headers or {})},
    )


def mcp_payload(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an MCP answer, whether it came as JSON or as one SSE event."""
    assert response.status_code == 200, f"HTTP {response.status_code}: {response.text[:500]}"
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        raise AssertionError(f"no data in the SSE answer: {response.text[:500]}")
    return response.json()


def compose_command() -> list[str] | None:
    """``docker compose`` when the plugin is there, else ``docker-compose`` (1.29 from Debian), else None."""
    docker_cli = shutil.which("docker")
    if docker_cli:
        probe = subprocess.run([docker_cli, "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [docker_cli, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def base_image_tag() -> str:
    return os.environ.get("AGENTBOX_BASE_IMAGE", "agentbox-base:bookworm")
