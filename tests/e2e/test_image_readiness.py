"""Start-up that tells the truth, in the image: from ``docker run`` on, ``/ready`` and ``tools/list`` are
asked side by side. With ``BROWSER_START_MODE=auto``, once ``/ready`` says ok no listing has fewer tools
than the final one (the built-ins and the browser program's page tools), and Docker's own health turns
healthy only then. With the default, ``async``, ``/ready`` does not wait for the browser program, and its
``browser`` field is the truth: every listing while it says ``ready`` has every tool."""

from __future__ import annotations

import time

import docker
import httpx
import pytest

from tests.support.builtin_tools import BUILTIN_TOOLS

from .conftest import API_KEY
from .dockerbox import running_box

pytestmark = pytest.mark.docker

AUTH = {"Authorization": f"Bearer {API_KEY}"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def start_up_samples(
    docker_client: docker.DockerClient, image: str, env: dict[str, str]
) -> list[tuple[bool, str | None, int, str | None]]:
    """``(ready, its browser field, tools listed, Docker health)`` every 0.1 s from ``docker run`` until
    the browser has served for 4 s."""
    with running_box(docker_client, image, {"AIO_API_KEY": API_KEY, **env}, wait_health=False) as box:
        samples: list[tuple[bool, str | None, int, str | None]] = []
        started = time.monotonic()
        browser_at: float | None = None
        with httpx.Client(timeout=10, headers={**AUTH, "Accept": "application/json, text/event-stream"}) as http:
            while time.monotonic() - started < 90 and (browser_at is None or time.monotonic() - browser_at < 4):
                try:
                    answer = http.get(box.url(8091, "/ready"))
                    listed = http.post(box.url(8091, "/mcp"), json=LIST).json()["result"]["tools"]
                except httpx.TransportError:
                    time.sleep(0.1)
                    continue
                box.container.reload()
                health = box.container.attrs["State"].get("Health", {}).get("Status")
                browser = answer.json().get("browser")
                samples.append((answer.status_code == 200, browser, len(listed), health))
                if answer.status_code == 200 and browser == "ready" and browser_at is None:
                    browser_at = time.monotonic()
                time.sleep(0.1)
        assert browser_at is not None, f"the browser never served: {samples[-5:]}\n{box.logs()}"
    return samples


def test_with_auto_no_listing_after_ready_has_fewer_tools(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    samples = start_up_samples(docker_client, agentbox_image, {"BROWSER_START_MODE": "auto"})
    final = samples[-1][2]
    assert final > len(BUILTIN_TOOLS)  # the browser program's tools are in
    first_ready = next(i for i, sample in enumerate(samples) if sample[0])
    assert all(tools == final for _, _, tools, _ in samples[first_ready:]), samples
    assert all(tools == final for _, _, tools, health in samples if health == "healthy"), samples
    assert all(browser == "ready" for _, browser, _, _ in samples[first_ready:]), samples
    assert all(tools <= final for _, _, tools, _ in samples[:first_ready])


def test_by_default_ready_does_not_wait_for_the_browser_and_says_so(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    samples = start_up_samples(docker_client, agentbox_image, {})
    final = samples[-1][2]
    assert final > len(BUILTIN_TOOLS)
    assert all(browser in ("starting", "ready") for ok, browser, _, _ in samples if ok), samples
    assert all(tools == final for ok, browser, tools, _ in samples if ok and browser == "ready"), samples
    assert all(browser == "starting" for ok, browser, tools, _ in samples if ok and tools < final), samples
    first_ready = next(i for i, sample in enumerate(samples) if sample[0])
    assert all(sample[0] for sample in samples[first_ready:]), samples  # ready stays ready
    assert all(tools >= len(BUILTIN_TOOLS) for ok, _, tools, _ in samples if ok), samples
