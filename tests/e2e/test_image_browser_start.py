"""``BROWSER_START_MODE=manual`` in the image: until a call needs the browser, neither Chromium nor the
browser program nor the display runs, yet ``/ready`` is green (saying ``not started``) and
``tools/list`` already holds every tool; the first use (a page tool, or a person opening the live
view) starts them and is answered, not refused."""

from __future__ import annotations

import docker
import httpx
import pytest
from websockets.sync.client import connect

from tests.support.builtin_tools import BUILTIN_TOOLS
from tests.support.jsonrpc import call_tool, tool_text

from .dockerbox import Box, running_box

pytestmark = pytest.mark.docker
KEY = "browser-start-e2e-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
#: The display, its VNC server, the browser program (not its waiting wrapper) and Chromium; the brackets keep
#: ``pgrep -f`` from finding the shell that runs it.
BROWSER_PROCESSES = (
    "pgrep -x Xvfb; pgrep -x x11vnc; pgrep -f '^/opt/agentbox/bin/python3 /opt/agentbox/bin/[a]gentbox-browser';"
    " pgrep -f '[c]hromium'"
)
MANUAL = {"AIO_API_KEY": KEY, "BROWSER_START_MODE": "manual"}


def listed(box: Box) -> set[str]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {**AUTH, "Accept": "application/json, text/event-stream"}
    answer = httpx.post(box.url(8091, "/mcp"), json=body, headers=headers, timeout=30)
    return {tool["name"] for tool in answer.json()["result"]["tools"]}


def unused(box: Box) -> None:
    """The box is ready, lists the page tools, and runs nothing of the browser."""
    box.wait_http(8091, "/ready", headers=AUTH)
    ready = httpx.get(box.url(8091, "/ready"), headers=AUTH, timeout=10).json()
    assert ready["status"] == "ready" and ready["browser"] == "not started", ready
    tools = listed(box)
    assert set(BUILTIN_TOOLS) < tools and {"browser_navigate", "browser_get_markdown"} <= tools
    _, running = box.exec(BROWSER_PROCESSES)
    assert running.strip() == "", f"started before its first use:\n{running}"


def test_the_first_page_tool_call_starts_the_browser_and_is_answered(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    with running_box(docker_client, agentbox_image, MANUAL) as box:
        unused(box)
        before = listed(box)
        navigate = call_tool(
            box.url(8091, "/mcp"), "browser_navigate", {"url": "data:text/html,<h1>hi</h1>"}, headers=AUTH
        )
        assert navigate["isError"] is False, f"{tool_text(navigate)}\n{box.logs()}"
        assert httpx.get(box.url(8091, "/ready"), headers=AUTH, timeout=10).json()["browser"] == "ready"
        assert listed(box) == before  # the built list was the program's own
        _, running = box.exec(BROWSER_PROCESSES)
        assert len(running.split()) >= 4, f"{running}\n{box.logs()}"


def test_opening_the_live_view_starts_the_display_and_the_browser(
    docker_client: docker.DockerClient, agentbox_image: str
) -> None:
    with running_box(docker_client, agentbox_image, MANUAL) as box:
        unused(box)
        socket_url = box.url(8091, "/vnc/websockify").replace("http://", "ws://")
        with connect(socket_url, additional_headers=AUTH, subprotocols=["binary"], open_timeout=30) as viewer:
            banner = viewer.recv(timeout=30)
        assert isinstance(banner, bytes) and banner.startswith(b"RFB 003."), banner
        version = httpx.get(box.url(8091, "/cdp/json/version"), headers=AUTH, timeout=30)
        assert version.status_code == 200 and "Browser" in version.json(), version.text
