"""``/v2/code`` driven as aiod's documentation describes it (examples/code-execution.mdx,
basic/jupyter.md), with plain httpx against a real gateway on 127.0.0.1, and ``sandbox_execute_code``'s
rich blocks through the official MCP client. The test interpreter (with ipykernel, matplotlib and
pandas) is the sandbox's ``python3``."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.png import SIGNATURE, decode_png
from tests.support.servers import serve_app
from tests.support.v2 import v2_data

KEY = "v2-code-test-key"
FIGURE = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"


def refused(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["success"] is False and body["message"], body
    return body


@pytest.fixture
def gateway(gateway_settings: GatewaySettings, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    settings = replace(gateway_settings, api_key=KEY, kernel_max_sessions=2)
    with serve_app(build_app(settings)) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway, timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as http:
        yield http


def test_one_shot_answers_the_documented_envelope(client: httpx.Client) -> None:
    body = client.post("/v2/code/execute", json={"language": "python", "code": "print(sum([1,2,3]))"}).json()
    assert body["success"] is True and body["message"] == "ok", body
    assert body["data"] == {
        "code": "print(sum([1,2,3]))",
        "language": "python",
        "status": "ok",
        "execution_count": 1,
        "exit_code": 0,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "6\n"}],
        "stdout": "6\n",
        "stderr": "",
        "session_id": None,
    }
    js = v2_data(client.post("/v2/code/execute", json={"language": "javascript", "code": "console.log(6)"}))
    assert js["stdout"] == "6\n"


def test_figures_tables_and_errors_are_rich_outputs(client: httpx.Client) -> None:
    for session in (None, "rich"):
        figure = v2_data(client.post("/v2/code/execute", json={"code": FIGURE, "session_id": session}))
        [shown] = figure["outputs"]
        assert shown["output_type"] == "display_data" and set(shown) == {"output_type", "data", "metadata"}
        png = base64.b64decode(shown["data"]["image/png"], validate=True)
        assert png.startswith(SIGNATURE) and decode_png(png).width > 100
        table = v2_data(
            client.post(
                "/v2/code/execute",
                json={"code": "import pandas as pd\npd.DataFrame({'v': [1, 2]})", "session_id": session},
            )
        )
        [result] = table["outputs"]
        assert result["output_type"] == "execute_result" and "<table" in result["data"]["text/html"]
        failed = client.post("/v2/code/execute", json={"code": "raise ValueError('nope')", "session_id": session})
        body = failed.json()
        assert failed.status_code == 200 and body["success"] is False and body["data"]["status"] == "error"
        [error] = body["data"]["outputs"]
        assert set(error) == {"output_type", "ename", "evalue", "traceback"}
        assert (error["ename"], error["evalue"]) == ("ValueError", "nope") and error["traceback"]


def test_sessions_keep_state_and_are_listed_and_deleted(client: httpx.Client) -> None:
    v2_data(client.post("/v2/code/execute", json={"code": "x = 21", "session_id": "s1"}))
    again = v2_data(client.post("/v2/code/execute", json={"code": "print(x * 2)", "session_id": "s1"}))
    assert (again["stdout"], again["session_id"], again["execution_count"]) == ("42\n", "s1", 2)
    [listed] = v2_data(client.get("/v2/code/sessions"))["sessions"]
    assert (listed["session_id"], listed["language"], listed["backend"]) == ("s1", "python", "kernel")
    assert listed["max_idle_seconds"] == 300
    v2_data(client.delete("/v2/code/sessions/s1"))
    refused(client.delete("/v2/code/sessions/s1"), 404)
    assert v2_data(client.get("/v2/code/sessions"))["sessions"] == []
    slow = client.post("/v2/code/execute", json={"code": "import time; time.sleep(30)", "timeout": 1}).json()
    assert slow["success"] is False and slow["data"]["status"] == "timeout"


def test_bad_input_limits_and_info(client: httpx.Client) -> None:
    refused(client.post("/v2/code/execute", json={"language": "ruby", "code": "1"}), 422)
    refused(client.post("/v2/code/execute", json={"code": "1", "timeout": 901}), 422)
    refused(client.post("/v2/code/execute", json={"code": "1", "timeout": 0}), 422)
    refused(client.post("/v2/code/execute", json={"language": "python"}), 422)
    refused(client.post("/v2/code/execute", json={"code": "1", "session_id": "bad id"}), 422)
    for name in ("a", "b"):
        v2_data(client.post("/v2/code/execute", json={"code": "1", "session_id": name}))
    assert (
        "AIO_KERNEL_MAX_SESSIONS"
        in refused(client.post("/v2/code/execute", json={"code": "1", "session_id": "c"}), 429)["message"]
    )
    info = v2_data(client.get("/v2/code/info"))
    python = next(language for language in info["languages"] if language["language"] == "python")
    assert python["backend"] == "kernel" and python["session_idle_timeout_seconds"] == 300
    assert (info["default_timeout"], info["max_timeout"], info["max_output_chars"]) == (30, 900, 2_000_000)
    assert info["kernel"]["max_sessions"] == 2 and info["active_sessions"] == 2


def test_the_routes_need_the_key(gateway: str) -> None:
    refused(httpx.post(f"{gateway}/v2/code/execute", json={"code": "print(1)"}), 401)
    refused(httpx.get(f"{gateway}/v2/code/sessions"), 401)
    refused(httpx.get(f"{gateway}/v2/code/info", headers={"Authorization": "Bearer wrong"}), 401)


@pytest.fixture
async def mcp(gateway: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(120)) as http:
        async with Client(streamable_http_client(f"{gateway}/mcp", http_client=http)) as client:
            yield client


@pytest.mark.anyio
async def test_mcp_answers_a_figure_as_an_image_block_and_html_as_a_resource(mcp: Client) -> None:
    figure = await mcp.call_tool("sandbox_execute_code", {"language": "python", "code": FIGURE})
    assert not figure.is_error
    [image] = figure.content
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(SIGNATURE)
    table = await mcp.call_tool("sandbox_execute_code", {"code": "import pandas as pd\npd.DataFrame({'v': [1]})"})
    text, html = table.content
    assert isinstance(text, types.TextContent) and "v" in text.text
    assert isinstance(html, types.EmbeddedResource) and isinstance(html.resource, types.TextResourceContents)
    assert html.resource.mime_type == "text/html" and "<table" in html.resource.text
    printed = await mcp.call_tool("sandbox_execute_code", {"code": "print(1)"})
    assert [block.text for block in printed.content if isinstance(block, types.TextContent)] == ["1\n"]
