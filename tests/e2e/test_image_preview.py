"""The preview proxy in the image: an app the agent starts with ``sandbox_execute_bash`` (the test app,
written into the container with ``sandbox_file_operations``) opened from outside through the
gateway's published port at ``/proxy/{port}/`` and ``/absproxy/{port}/``."""

from __future__ import annotations

import hashlib
import json
import os
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.support.jsonrpc import call_tool, tool_json
from tests.support.preview import APP, echo, memory_kib

from .conftest import API_KEY
from .dockerbox import Box, start_in_box, write_in_box

pytestmark = pytest.mark.docker

APP_SOURCE = APP.read_text()
APP_PORT = 8770
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def app(box: Box) -> int:
    """The test app, started inside the container the way an agent would start a dev server."""
    auth = {"Authorization": f"Bearer {API_KEY}"}
    write_in_box(box, auth, "/tmp/preview/app.py", APP_SOURCE)
    start_in_box(
        box,
        auth,
        f"python3 /tmp/preview/app.py --port {APP_PORT} >/tmp/preview/app.log 2>&1",
        f"http://127.0.0.1:{APP_PORT}/ready",
    )
    return APP_PORT


def gateway_memory_kib(box: Box) -> dict[str, int]:
    code, status = box.exec(f"cat /proc/{box.program_pid('gateway')}/status")
    assert code == 0, status
    return memory_kib(status)


def test_app_opened_through_proxy_and_absproxy(box: Box, app: int, auth: dict[str, str]) -> None:
    gateway = box.url(8091)
    answer = echo(httpx.get(f"{gateway}/proxy/{app}/dir/page?x=1&y=two", headers=auth))
    assert answer["path"] == "/dir/page" and answer["query"] == "x=1&y=two"
    assert answer["headers"]["x-forwarded-prefix"] == f"/proxy/{app}"
    assert answer["headers"]["x-forwarded-host"] == gateway.removeprefix("http://")
    absolute = echo(httpx.get(f"{gateway}/absproxy/{app}/dir/page?x=1", headers=auth))
    assert absolute["path"] == f"/absproxy/{app}/dir/page" and absolute["query"] == "x=1"

    redirect = httpx.get(f"{gateway}/proxy/{app}/redirect", headers=auth)
    assert redirect.status_code == 302 and redirect.headers["location"] == f"/proxy/{app}/landing?from=redirect"
    redirect = httpx.get(f"{gateway}/absproxy/{app}/redirect-absolute", headers=auth)
    assert redirect.headers["location"] == f"/absproxy/{app}/landing"
    landed = httpx.get(f"{gateway}/proxy/{app}/redirect", headers=auth, follow_redirects=True)
    assert echo(landed)["path"] == "/landing"

    payload = os.urandom(2 * MIB)
    posted = echo(httpx.post(f"{gateway}/proxy/{app}/upload", content=payload, headers=auth))
    assert posted["body_sha256"] == hashlib.sha256(payload).hexdigest()
    by_query = echo(httpx.get(f"{gateway}/proxy/{app}/q?api_key={API_KEY}"))
    for seen in (answer, absolute, posted, by_query):
        assert API_KEY not in json.dumps(seen)  # the app never sees the gateway's key


def test_preview_needs_the_key_and_refuses_bad_ports(box: Box, app: int, auth: dict[str, str]) -> None:
    gateway = box.url(8091)
    assert httpx.get(f"{gateway}/proxy/{app}/").status_code == 401
    assert httpx.get(f"{gateway}/proxy/70000/", headers=auth).status_code == 400
    assert httpx.get(f"{gateway}/proxy/8091/health", headers=auth).status_code == 400
    nothing = httpx.get(f"{gateway}/proxy/8799/", headers=auth)
    assert nothing.status_code == 502 and "port 8799" in nothing.json()["message"]


def test_sse_and_websocket_through_the_proxy(box: Box, app: int, auth: dict[str, str]) -> None:
    started = time.monotonic()
    arrivals = []
    with httpx.stream("GET", box.url(8091, f"/proxy/{app}/sse?pause=2"), headers=auth, timeout=20) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                arrivals.append(time.monotonic() - started)
    assert len(arrivals) == 2 and arrivals[0] < 1.5 and arrivals[1] >= 2.0, arrivals  # first before the app ends

    ws_url = "ws" + box.url(8091, f"/proxy/{app}/ws").removeprefix("http")
    with connect(ws_url, subprotocols=["hmr", "other"], additional_headers=auth, open_timeout=10) as socket_:
        assert socket_.subprotocol == "hmr"
        socket_.send("reload?")
        assert socket_.recv(timeout=10) == "reload?"


def test_context_lists_the_app_with_its_preview_url(box: Box, app: int, auth: dict[str, str]) -> None:
    info = tool_json(call_tool(box.url(8091, "/mcp"), "sandbox_get_context", headers=auth))
    links = {entry["port"]: entry["url"] for entry in info["previews"]}
    assert links[app] == box.url(8091, f"/proxy/{app}/")
    # The sandbox's own services (issue 28, item 6): the gateway, VNC, MCP mode, the browser program,
    # Chromium's DevTools, the browser proxy are listening but are no apps.
    own = {8091, 5900, 8081, 8100, 9222, 18093}
    assert {8091, 8081, 18093} <= {int(port) for port in info["occupied_ports"]}  # the browser starts on demand
    assert not own & set(links), own & set(links)
    rest = httpx.get(box.url(8091, "/v1/sandbox"), headers=auth).json()["detail"]["system"]["previews"]
    assert {entry["port"]: entry["url"] for entry in rest}[app] == links[app]


def test_200_mib_download_streams_without_growing_the_gateway(box: Box, app: int, auth: dict[str, str]) -> None:
    size = 200 * MIB
    httpx.get(box.url(8091, f"/proxy/{app}/download?bytes={MIB}"), headers=auth).raise_for_status()
    before = gateway_memory_kib(box)
    received = 0
    url = box.url(8091, f"/proxy/{app}/download?bytes={size}")
    with httpx.stream("GET", url, headers=auth, timeout=120) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            received += len(chunk)
    after = gateway_memory_kib(box)
    assert received == size
    assert (after["VmHWM"] - before["VmHWM"]) / 1024 < 24, (before, after)
    assert (after["VmRSS"] - before["VmRSS"]) / 1024 < 24, (before, after)


def test_a_detached_app_outlives_the_cleanup_of_all_sessions(box: Box, app: int, auth: dict[str, str]) -> None:
    """Last in this module: it cleans up every session, so the ``app`` fixture's server dies (issue 28,
    item 12: an app started in a session dies with it, one started detached keeps serving)."""
    url, detached = box.url(8091, "/mcp"), APP_PORT + 1
    serve = {"cmd": f"exec python3 /tmp/preview/app.py --port {detached}", "detach": True}
    started = tool_json(call_tool(url, "sandbox_execute_bash", serve, headers=auth))
    assert started["detached"] is True and started["pid"] > 0, started
    deadline = time.monotonic() + 10
    while httpx.get(box.url(8091, f"/proxy/{detached}/ready"), headers=auth).status_code != 200:
        assert time.monotonic() < deadline, "the detached app did not start"
        time.sleep(0.2)

    httpx.delete(box.url(8091, "/v1/shell/sessions"), headers=auth).raise_for_status()
    deadline = time.monotonic() + 10
    while httpx.get(box.url(8091, f"/proxy/{app}/ready"), headers=auth).status_code != 502:
        assert time.monotonic() < deadline, "the session's app outlived its session"
        time.sleep(0.2)
    assert httpx.get(box.url(8091, f"/proxy/{detached}/ready"), headers=auth).status_code == 200
    info = tool_json(call_tool(url, "sandbox_get_context", headers=auth))
    ports = {entry["port"] for entry in info["previews"]}
    assert detached in ports and app not in ports
