"""The preview list (issue 28, item 6): ``previews`` in ``/v1/sandbox`` and ``sandbox_get_context``
names the apps the agent started, never the sandbox's own services.

A real gateway (``aiod start``) runs under a stand-in supervisord (a process whose command line names
it, as the image's does) beside a supervised program listening on a port of its own; another process
listens on the port the settings give the browser program; the app is started the way an agent starts
a dev server, by a shell command through the gateway."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import shared_http
from tests.support.jsonrpc import call_tool, tool_json
from tests.support.preview import APP
from tests.support.servers import console_script, free_port, run_command, wait_http

KEY = "preview-list-key-41c7"
AUTH = {"Authorization": f"Bearer {KEY}"}

#: Starts each argv of its first argument and waits for them, stopping them on SIGTERM.
SUPERVISOR = """
import json, signal, subprocess, sys
children = [subprocess.Popen(argv) for argv in json.loads(sys.argv[1])]
signal.signal(signal.SIGTERM, lambda *_: [child.terminate() for child in children])
for child in children:
    child.wait()
"""


def app_argv(port: int) -> list[str]:
    return [sys.executable, str(APP), "--port", str(port)]


@pytest.fixture(scope="module")
def box() -> Iterator[dict[str, Any]]:
    """The gateway, the supervised program's port and the browser program's port (both listening)."""
    gateway, program, browser = free_port(), free_port(), free_port()
    env = {
        "AIO_API_KEY": KEY,
        "AGENTBOX_BROWSER_URL": f"http://127.0.0.1:{browser}",
        "AGENTBOX_BROWSER_PROXY_PORT": "0",
    }
    children = [[console_script("aiod"), "start", "--port", str(gateway)], app_argv(program)]
    supervisor = [sys.executable, "-c", SUPERVISOR, json.dumps(children), "supervisord"]
    with (
        run_command(app_argv(browser), ready_url=f"http://127.0.0.1:{browser}/ready"),
        run_command(supervisor, env=env, ready_url=f"http://127.0.0.1:{gateway}/health") as process,
    ):
        wait_http(f"http://127.0.0.1:{program}/ready", expect=None)
        yield {"url": f"http://127.0.0.1:{gateway}", "program": program, "browser": browser, "supervisor": process}


def held_ports(pid: int) -> set[int]:
    """The listening ports whose sockets process ``pid`` holds."""
    inodes = {
        link[len("socket:[") : -1]
        for fd in os.listdir(f"/proc/{pid}/fd")
        if (link := os.readlink(f"/proc/{pid}/fd/{fd}")).startswith("socket:[")
    }
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def gateway_pid(supervisor: int) -> int:
    """The stand-in supervisor's first child: the gateway."""
    return int(Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()[0])


def previews(url: str) -> tuple[set[int], set[int], set[int]]:
    """The preview ports of ``/v1/sandbox`` and of ``sandbox_get_context``, and the occupied ports
    (other programs on the machine come and go between the calls: the lists are compared per port)."""
    system = shared_http.get(f"{url}/v1/sandbox", headers=AUTH).json()["detail"]["system"]
    info = tool_json(call_tool(f"{url}/mcp", "sandbox_get_context", headers=AUTH))
    return (
        {entry["port"] for entry in system["previews"]},
        {entry["port"] for entry in info["previews"]},
        {int(port) for port in system["occupied_ports"]},
    )


def test_the_agents_app_is_listed_and_the_sandboxs_own_ports_are_not(box: dict[str, Any]) -> None:
    url, app = box["url"], free_port()
    started = shared_http.post(
        f"{url}/v1/shell/exec",
        headers=AUTH,
        json={
            "command": f"setsid nohup {' '.join(app_argv(app))} >/dev/null 2>&1 & "
            f"for i in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:{app}/ready && break; sleep 0.1; done",
            "timeout": 30,
        },
    )
    assert started.json()["data"]["exit_code"] == 0, started.text
    try:
        rest, mcp, occupied = previews(url)
        assert app in rest and app in mcp
        own = {box["program"], box["browser"], int(url.rsplit(":", 1)[1])}
        own |= held_ports(gateway_pid(box["supervisor"].pid))  # the browser proxy on its free port too
        assert own <= occupied  # all are listening: occupied_ports still says so
        assert not own & (rest | mcp), own & (rest | mcp)
    finally:
        shared_http.delete(f"{url}/v1/shell/sessions", headers=AUTH).raise_for_status()
    deadline = time.monotonic() + 10
    while app in previews(url)[0] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert app not in previews(url)[0]  # gone with its session, gone from the list
