"""What every program does alike (``agentbox_common.service``): the one ``Accept`` rule of its MCP
endpoint, its lifespan's order, the refusal to start on a bad setting (exit status 2), and the
liveness answer given while a program still builds itself (``agentbox_common.starting``)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentbox_common.service import CONFIG_ERROR_STATUS, lifespan, mcp_endpoint
from agentbox_common.settings import ConfigError
from agentbox_common.starting import LIFESPAN_FAILED_STATUS, StartingApp
from agentbox_gateway import liveness
from tests.support.polling import until
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


class _Built:
    """What a program's build gives: an app whose lifespan and answers a test can tell apart."""

    def __init__(self, fail_to_start: bool = False) -> None:
        self.events: list[str] = []

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            if fail_to_start:
                raise RuntimeError("no database")
            self.events.append("started")
            yield
            self.events.append("stopped")

        async def health(request: Request) -> JSONResponse:
            return JSONResponse({"status": "ok", "from": "app"})

        async def work(request: Request) -> JSONResponse:
            return JSONResponse({"served": request.url.path, "started": "started" in self.events})

        self.app = Starlette(
            routes=[Route("/health", health), Route("/work", work)],
            lifespan=lifespan,
        )


def _starting(
    built: _Built, preloaded: threading.Event, stops: list[int], build_raises: Exception | None = None
) -> StartingApp:
    def build() -> ASGIApp:
        if build_raises is not None:
            raise build_raises
        return built.app

    return StartingApp(
        "prog",
        preload=lambda: preloaded.wait(20),
        build=build,
        health=lambda: {"status": "ok", "from": "starting"},
        stop=stops.append,
    )


def _get_later(url: str, **headers: str) -> tuple[threading.Thread, list[httpx.Response]]:
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(httpx.get(url, headers=headers, timeout=20)), daemon=True)
    thread.start()
    return thread, answers


def test_a_starting_program_is_live_at_once_and_serves_the_rest_once_built() -> None:
    built, preloaded, stops = _Built(), threading.Event(), []
    with serve_app(_starting(built, preloaded, stops)) as base:
        # Live while the heavy import runs: the liveness answer, and nothing else yet.
        assert httpx.get(f"{base}/health").json() == {"status": "ok", "from": "starting"}
        assert httpx.head(f"{base}/health").status_code == 200
        assert httpx.get(f"{base}/health", headers={"Host": "[::1]:80"}).json()["from"] == "starting"
        waiting, answers = _get_later(f"{base}/work")
        # A name only the app's host guard can judge (a proxy's public one) waits for the app.
        public, public_answers = _get_later(f"{base}/health", Host="agent.example.test")
        waiting.join(0.3)
        assert waiting.is_alive() and public.is_alive() and not answers + public_answers and built.events == []
        preloaded.set()
        waiting.join(20)
        public.join(20)
        # The waiting requests were served by the built app, after its lifespan started.
        assert answers[0].json() == {"served": "/work", "started": True}
        assert public_answers[0].json() == {"status": "ok", "from": "app"}
        assert httpx.get(f"{base}/health").json() == {"status": "ok", "from": "app"}
    assert built.events == ["started", "stopped"] and stops == []


def test_a_build_that_refuses_its_settings_stops_the_program_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    built, preloaded, stops = _Built(), threading.Event(), []
    refused = ConfigError("AIO_SOMETHING must be a number, got 'x'")
    with serve_app(_starting(built, preloaded, stops, build_raises=refused)) as base:
        waiting, answers = _get_later(f"{base}/work")
        waiting.join(0.2)
        preloaded.set()
        waiting.join(20)
        assert answers[0].status_code == 503 and stops == [CONFIG_ERROR_STATUS]
    assert capsys.readouterr().err.startswith("prog: refusing to start: AIO_SOMETHING must be a number")
    assert built.events == []


def test_an_app_whose_lifespan_fails_stops_the_program_with_uvicorns_status() -> None:
    built, preloaded, stops = _Built(fail_to_start=True), threading.Event(), []
    preloaded.set()
    with serve_app(_starting(built, preloaded, stops)) as base:
        assert httpx.get(f"{base}/work", timeout=20).status_code == 503
        assert stops == [LIFESPAN_FAILED_STATUS] == [3]
        assert httpx.get(f"{base}/health").json() == {"status": "ok", "from": "starting"}


def test_aiod_is_live_while_it_starts_with_the_answer_it_gives_once_started() -> None:
    """The gateway starts this way: its early answer is the built app's, word for word."""
    port = free_port()
    process = subprocess.Popen(
        [console_script("aiod"), "start", "--port", str(port)],
        env=_clean_env(AGENTBOX_WORKSPACE=tempfile.mkdtemp()),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        early = until(lambda: _health_or_none(port), 20)
        httpx.get(f"http://127.0.0.1:{port}/ready", timeout=20)
        assert early == httpx.get(f"http://127.0.0.1:{port}/health").json() == liveness()
    finally:
        process.terminate()
        process.wait(20)


def _health_or_none(port: int) -> dict[str, Any] | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
    except httpx.TransportError:
        return None
