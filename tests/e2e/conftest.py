"""Session fixtures of the end-to-end tests: one Docker client, the image built once from this checkout
(on the offline base ``AGENTBOX_BASE_IMAGE``, default agentbox-base:bookworm, made by
images/build-base.sh), and the containers several tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator

import docker
import pytest
from docker.errors import ImageNotFound

from tests.support.requirements import missing, require_docker

from .dockerbox import REPO, Box, base_image_tag, build_image, remove_leftovers, start_box

#: The gateway key and MCP-mode token of the shared container.
API_KEY = "e2e-gateway-key-3f9c1a"
MCP_TOKEN = "e2e-mcp-token-7d21b0"


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    require_docker()
    client = docker.from_env(timeout=900)
    remove_leftovers(client)
    yield client
    remove_leftovers(client)
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client: docker.DockerClient) -> str:
    tag = base_image_tag()
    try:
        docker_client.images.get(tag)
    except ImageNotFound:
        missing(f"base image {tag} not found: build it with images/build-base.sh (or set AGENTBOX_BASE_IMAGE)")
    return tag


@pytest.fixture(scope="session")
def agentbox_image(docker_client: docker.DockerClient, base_image: str) -> str:
    """images/Dockerfile built once per session from this checkout (the build cache makes reruns quick),
    or the image named by AGENTBOX_IMAGE (to test an image built elsewhere) as it is."""
    prebuilt = os.environ.get("AGENTBOX_IMAGE")
    if prebuilt:
        docker_client.images.get(prebuilt)
        return prebuilt
    return build_image(
        docker_client,
        path=REPO,
        dockerfile="images/Dockerfile",
        tag=os.environ.get("AGENTBOX_IMAGE_TAG", "agentbox:latest"),
        buildargs={"BASE_IMAGE": base_image},
    )


@pytest.fixture(scope="module")
def box(docker_client: docker.DockerClient, agentbox_image: str) -> Iterator[Box]:
    """The image with its defaults plus a gateway key and standalone MCP mode with a token."""
    started = start_box(
        docker_client,
        agentbox_image,
        {
            "AIO_API_KEY": API_KEY,
            "AICODEBOX_MCP_MODE": "1",
            "AICODEBOX_MCP_MODE_TOKEN": MCP_TOKEN,
        },
    )
    try:
        started.wait_http(8081, "/healthz")  # each program starts on its own; the gateway is live first
        yield started
    finally:
        started.remove()


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {API_KEY}"}
