"""What every program does alike (``agentbox_common.service``): the one ``Accept`` rule of its MCP
endpoint, its lifespan's order, and the refusal to start on a bad setting (exit status 2)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentbox_common.service import CONFIG_ERROR_STATUS, lifespan, mcp_endpoint
from tests.support.servers import console_script, free_port, serve_app


async def _echo_accept(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with the ``Accept`` values it was handed, in order."""
    values = [value.decode() for name, value in scope["headers"] if name == b"accept"]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(values).encode()})


def _accepts_seen(base: str, accept: list[str]) -> list[str]:
    """POST with exactly these ``Accept`` headers (none for ``[]``), as urllib or curl would."""
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=10)
    try:
        connection.putrequest("POST", "/mcp", skip_accept_encoding=True)
        for value in accept:
            connection.putheader("Accept", value)
        connection.putheader("Content-Length", "0")
        connection.endheaders()
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def test_an_absent_or_blank_accept_means_anything_and_a_given_one_is_kept() -> None:
    with serve_app(Starlette(routes=[Route("/mcp", mcp_endpoint(_echo_accept), methods=["POST"])])) as base:
        assert _accepts_seen(base, []) == ["*/*"]
        assert _accepts_seen(base, [""]) == ["*/*"]
        assert _accepts_seen(base, ["  ", ""]) == ["*/*"]
        assert _accepts_seen(base, ["text/html"]) == ["text/html"]
        assert _accepts_seen(base, ["", "application/json"]) == ["", "application/json"]


@pytest.mark.anyio
async def test_the_lifespan_enters_its_parts_in_order_and_leaves_them_in_reverse() -> None:
    told: list[str] = []

    def part(name: str, fail: bool = False) -> Callable[[], AbstractAsyncContextManager[None]]:
        @contextlib.asynccontextmanager
        async def entered() -> AsyncIterator[None]:
            told.append(f"start {name}")
            if fail:
                raise RuntimeError(f"{name} cannot start")
            try:
                yield
            finally:
                told.append(f"stop {name}")

        return entered

    app = Starlette()
    async with lifespan(part("sessions"), part("planes"))(app):
        told.append("serving")
    assert told == ["start sessions", "start planes", "serving", "stop planes", "stop sessions"]

    told.clear()
    with pytest.raises(RuntimeError, match="planes cannot start"):
        async with lifespan(part("sessions"), part("planes", fail=True), part("never"))(app):
            told.append("serving")
    assert told == ["start sessions", "start planes", "stop sessions"]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AICODEBOX_", "AGENTBOX_", "AIO_"))}
    return {**env, **extra}


def _refusals(tmp_path: Path) -> list[tuple[str, list[str], dict[str, Any], str]]:
    workspace = str(tmp_path / "ws")
    return [
        ("aiod", ["start", "--port", str(free_port()), "--mcp-servers", "{bad"], {}, "--mcp-servers"),
        ("aiod", ["doctor"], {"EXTRA_MCP_SERVERS": "{bad"}, "EXTRA_MCP_SERVERS"),
        ("agentbox-browser", ["--viewport", "huge"], {}, "AGENTBOX_VIEWPORT"),
        ("agentbox-mcp-mode", [], {"AICODEBOX_WORKSPACE": workspace, "AICODEBOX_ADAPTER": "nosuch"}, "ADAPTER"),
        ("agentbox-api", [], {"AICODEBOX_API_MODE": "1", "AICODEBOX_WORKSPACE": workspace}, "MODELS"),
    ]


@pytest.mark.parametrize("index", range(5), ids=["aiod-start", "aiod-doctor", "browser", "mcp-mode", "api"])
def test_every_program_refuses_a_bad_setting_with_exit_status_2(tmp_path: Path, index: int) -> None:
    prog, args, env, variable = _refusals(tmp_path)[index]
    done = subprocess.run(
        [console_script(prog), *args], env=_clean_env(**env), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == CONFIG_ERROR_STATUS == 2, done.stderr
    assert done.stderr.startswith(f"{prog}: refusing to start: ") and variable in done.stderr, done.stderr


@pytest.mark.parametrize("prog", ["aiod", "agentbox-browser", "agentbox-mcp-mode", "agentbox-api"])
def test_a_bad_connection_limit_is_refused_alike(tmp_path: Path, prog: str) -> None:
    args = ["start", "--port", str(free_port())] if prog == "aiod" else []
    env = {
        "AGENTBOX_HEADER_TIMEOUT": "soon",
        "AICODEBOX_WORKSPACE": str(tmp_path / "ws"),
        "AICODEBOX_AVAILABLE_MODELS": "model-a",
        "AGENTBOX_CDP_PORT": str(free_port()),
        "AGENTBOX_CHROMIUM": "/bin/false",
    }
    done = subprocess.run(
        [console_script(prog), *args], env=_clean_env(**env), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"{prog}: refusing to start: ") and "AGENTBOX_HEADER_TIMEOUT" in done.stderr
