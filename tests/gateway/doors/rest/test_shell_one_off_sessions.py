"""REST calls that name no shell session leave none behind (issue 30): ``/v1/shell/exec`` and
``/v1/bash/exec`` without an id get a session that closes after its command, unless the id they
answered with is used again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(gateway_settings: GatewaySettings) -> Iterator[str]:
    app = build_app(gateway_settings)
    app.state.planes.shell.implicit_grace = 0.3
    with serve_app(app) as url:
        yield url


async def session_ids(http: httpx.AsyncClient) -> set[str]:
    return set((await http.get("/v1/shell/sessions")).json()["data"]["sessions"])


async def gone_soon(http: httpx.AsyncClient, session_id: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while session_id in await session_ids(http):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_shell_exec_without_id_leaves_no_session(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        first = (await http.post("/v1/shell/exec", json={"command": "echo one"})).json()["data"]
        second = (await http.post("/v1/shell/exec", json={"command": "echo two"})).json()["data"]
        assert (first["output"], second["output"]) == ("one\n", "two\n")
        for answer in (first, second):
            assert await gone_soon(http, answer["session_id"]), "a one-off session stayed registered"


async def test_bash_exec_without_id_leaves_no_session(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        answer = (await http.post("/v1/bash/exec", json={"command": "echo one"})).json()["data"]
        assert await gone_soon(http, answer["session_id"])


async def test_an_id_used_again_keeps_its_session(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        first = (await http.post("/v1/shell/exec", json={"command": "cd /usr"})).json()["data"]
        again = await http.post("/v1/shell/exec", json={"command": "pwd", "id": first["session_id"]})
        assert again.json()["data"]["output"] == "/usr\n"
        await asyncio.sleep(0.8)
        assert first["session_id"] in await session_ids(http)


async def test_an_async_command_stays_readable_until_it_ends(gateway: str) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as http:
        started = await http.post("/v1/shell/exec", json={"command": "sleep 1; echo late", "async_mode": True})
        session_id = started.json()["data"]["session_id"]
        await asyncio.sleep(0.5)
        view = await http.post("/v1/shell/view", json={"id": session_id})
        assert view.status_code == 200
        await asyncio.sleep(1.2)
        assert session_id in await session_ids(http), "closed although the caller kept the id"
