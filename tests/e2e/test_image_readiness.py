"""Start-up that tells the truth, in the image: from ``docker run`` on, ``/ready`` and ``tools/list`` are
asked side by side; once ``/ready`` says ok, no listing has fewer tools than the final one (the
built-ins and the browser program's page tools), and Docker's own health turns healthy only then."""

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


def test_no_listing_after_ready_has_fewer_tools(docker_client: docker.DockerClient, agentbox_image: str) -> None:
    with running_box(docker_client, agentbox_image, {"AIO_API_KEY": API_KEY}, wait_health=False) as box:
        samples: list[tuple[float, bool, int, str | None]] = []  # (s since start, ready, tools, health)
        started = time.monotonic()
        ready_at: float | None = None
        with httpx.Client(timeout=10, headers={**AUTH, "Accept": "application/json, text/event-stream"}) as http:
            while time.monotonic() - started < 90 and (ready_at is None or time.monotonic() - ready_at < 4):
                try:
                    ready = http.get(box.url(8091, "/ready")).status_code == 200
                    listed = http.post(box.url(8091, "/mcp"), json=LIST).json()["result"]["tools"]
                except httpx.TransportError:
                    time.sleep(0.1)
                    continue
                box.container.reload()
                health = box.container.attrs["State"].get("Health", {}).get("Status")
                samples.append((time.monotonic() - started, ready, len(listed), health))
                if ready and ready_at is None:
                    ready_at = time.monotonic()
                time.sleep(0.1)
        assert ready_at is not None, f"/ready never answered 200: {samples[-5:]}\n{box.logs()}"
        final = samples[-1][2]
        assert final > len(BUILTIN_TOOLS)  # the browser program's tools are in
        first_ready = next(i for i, sample in enumerate(samples) if sample[1])
        assert all(tools == final for _, _, tools, _ in samples[first_ready:]), samples
        assert all(tools == final for _, _, tools, health in samples if health == "healthy"), samples
        before_ready = [tools for _, ready, tools, _ in samples[:first_ready]]
        assert all(tools <= final for tools in before_ready)
