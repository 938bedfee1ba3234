"""How ``/v1/browser/page|tabs|...`` answer when the browser program cannot serve them: no program is
503 with the cause as hint, its refusals keep their status, its failures are 502 (never a 500)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.servers import free_port, serve_app

#: The fake browser program's answer per page operation: (HTTP status, body).
ANSWERS = {
    "tabs_list": (200, {"data": [{"index": 0, "active": True, "title": "", "url": "about:blank"}]}),
    "tabs_activate": (404, {"error": "no tab 7"}),
    "html": (500, {"error": "Target closed"}),
}


def fake_browser_program() -> Starlette:
    async def page(request: Request) -> JSONResponse:
        status, body = ANSWERS[request.path_params["operation"]]
        return JSONResponse(body, status_code=status)

    return Starlette(routes=[Route("/page/{operation}", page, methods=["POST"])])


@pytest.fixture
def program() -> Iterator[str]:
    with serve_app(fake_browser_program()) as url:
        yield url


@contextlib.contextmanager
def gateway_with(settings: GatewaySettings, browser_url: str) -> Iterator[str]:
    with serve_app(build_app(replace(settings, browser_url=browser_url))) as url:
        yield url


def test_the_program_s_answers_keep_their_status_and_a_failure_is_502(
    gateway_settings: GatewaySettings, program: str
) -> None:
    with gateway_with(gateway_settings, program) as gateway:
        listed = shared_http.get(f"{gateway}/v1/browser/tabs")
        assert listed.status_code == 200 and listed.json()["data"][0]["url"] == "about:blank"
        refused = shared_http.put(f"{gateway}/v1/browser/tabs/7/activate")
        assert refused.status_code == 404
        assert refused.json() == {"success": False, "message": "no tab 7", "data": None, "hint": None}
        broken = shared_http.get(f"{gateway}/v1/browser/page/html")
        assert broken.status_code == 502
        assert broken.json()["message"] == "the browser program failed the operation: Target closed"


def test_no_browser_program_is_503_with_the_cause_as_hint(gateway_settings: GatewaySettings) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    with gateway_with(gateway_settings, nowhere) as gateway:
        answer = shared_http.get(f"{gateway}/v1/browser/tabs")
        assert answer.status_code == 503
        body = answer.json()
        assert body["message"] == "Browser unavailable: the browser program does not answer"
        assert body["hint"] == f"the browser program at {nowhere} did not answer (ConnectError)"
