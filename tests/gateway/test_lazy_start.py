"""A gateway that only serves MCP stays lean: building it loads neither FastAPI (the REST door is
built by its first request) nor aiohttp (loaded by the first upstream call or preview) nor
jsonschema (loaded by the first tool call, which checks its arguments), and neither building it nor
answering its first ``tools/list`` loads what only other calls use (httpcore with an httpx client's
transport, Xlib, YAML, tar archives, yarl, the WebSocket client, the code plane), it starts
no interpreter before a code call needs one, and the REST door still answers its first request,
built once, in a thread, while ``/mcp`` goes on answering."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.doors import rest
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.servers import serve_app

HEADERS = {"Accept": "application/json, text/event-stream"}
PROBE = """
import sys
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
build_app(GatewaySettings())
print(sorted({name.split(".")[0] for name in sys.modules} & {"fastapi", "aiohttp", "jsonschema"}))
"""


def test_building_the_gateway_loads_neither_fastapi_nor_aiohttp_nor_jsonschema() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr


#: Loaded by the first call that needs them, never by start-up (each costs milliseconds of it).
FIRST_USE_ONLY = (
    "httpcore",
    "h11",
    "Xlib",
    "yaml",
    "tarfile",
    "yarl",
    "websockets.asyncio.client",
    "agentbox_gateway.planes.code.plane",
)
LISTING_PROBE = """
import asyncio, dataclasses, json, sys
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings

async def tools_list(app):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    headers = [(b"host", b"127.0.0.1:8091"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"), (b"content-length", b"%d" % len(body))]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "root_path": "", "query_string": b"",
             "headers": headers, "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8091)}
    sent, answer = [], []
    async def receive():
        if sent:
            await asyncio.Event().wait()
        sent.append(1)
        return {"type": "http.request", "body": body, "more_body": False}
    async def send(message):
        answer.append(message)
    async with app.router.lifespan_context(app):
        await app(scope, receive, send)
    return answer[0]["status"], json.loads(b"".join(m.get("body", b"") for m in answer[1:]))

app = build_app(dataclasses.replace(GatewaySettings(), browser_proxy_port=0))
status, listed = asyncio.run(tools_list(app))
assert status == 200 and listed["result"]["tools"], (status, listed)
print(sorted(name for name in sys.argv[1:] if name in sys.modules))
"""


def test_start_up_and_the_first_tools_list_load_nothing_only_other_calls_use() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", LISTING_PROBE, *FIRST_USE_ONLY], capture_output=True, text=True, timeout=60, check=True
    )
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_the_rest_door_answers_its_first_request(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(gateway_settings)) as base:
        assert (
            shared_http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 200
        )
        first = shared_http.get(f"{base}/v1/sandbox", timeout=30)
        assert first.status_code == 200 and first.json()["success"] is True
        assert shared_http.get(f"{base}/v1/openapi.json").json()["info"]["title"] == "agentbox sandbox API"


def interpreter_workers() -> list[str]:
    """The code plane's interpreters among this process's children (the test server runs in it),
    by language: their command lines carry the driver's end-marker text."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"agentbox-end" in b"".join(argv):
            found.append(Path(argv[0].decode()).name)
    return found


def mcp_call(base: str, name: str, arguments: dict[str, str]) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    result = shared_http.post(f"{base}/mcp", json=body, headers=HEADERS, timeout=30).json()["result"]
    assert not result["isError"], result
    return str(result["content"][0]["text"])


def test_interpreters_start_on_the_first_code_call(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(gateway_settings)) as base:
        assert '"output":"hi\\n"' in mcp_call(base, "sandbox_execute_bash", {"cmd": "echo hi"})
        time.sleep(0.5)  # the gateway's warm-up used to spawn them at once, in the background
        assert interpreter_workers() == []
        assert mcp_call(base, "sandbox_execute_code", {"language": "python", "code": "print(1)"}) == "1\n"
        assert [name.startswith("python") for name in interpreter_workers()] == [True]


def test_mcp_answers_while_the_rest_door_is_being_built(
    gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real REST door, its build held half-way until MCP has answered: a build on the event loop
    would hold ``/mcp`` too (the call below would time out)."""
    building, release = threading.Event(), threading.Event()
    builds = []
    real_build = rest.build_rest_app

    def held_build(*args: object, **kwargs: object) -> object:
        builds.append(1)
        building.set()
        release.wait(60)
        return real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rest, "build_rest_app", held_build)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with serve_app(build_app(gateway_settings)) as base, ThreadPoolExecutor(2) as pool:
        try:
            firsts = [pool.submit(httpx.get, f"{base}/v1/sandbox", timeout=60) for _ in range(2)]
            assert building.wait(30)
            listed = shared_http.post(f"{base}/mcp", json=listing, headers=HEADERS, timeout=5)
            assert listed.status_code == 200 and listed.json()["result"]["tools"]
            assert not release.is_set() and not any(first.done() for first in firsts)
        finally:
            release.set()
        assert [first.result().status_code for first in firsts] == [200, 200]
    assert len(builds) == 1  # the second first request waited for the first one's build
