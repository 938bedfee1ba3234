"""The image's ``/v2/code`` and ``sandbox_execute_code`` with rich outputs, as an agent uses them: the
sandbox's own python3 (ipykernel, matplotlib, numpy, pandas as the image ships them) answers a figure
as a PNG, a DataFrame as an HTML table, an exception with its traceback; a session is a Jupyter kernel
that keeps its state, and a kernel killed under it is reported lost, then restarted."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from tests.support.png import SIGNATURE, decode_png
from tests.support.v2 import v2_data

from .conftest import API_KEY
from .dockerbox import Box

pytestmark = pytest.mark.docker

FIGURE = "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3))\nplt.plot([1, 3, 2])\nplt.show()"
FRAME = "import pandas as pd\ndf = pd.DataFrame({'month': ['01', '02'], 'revenue': [120, 135]})\ndf"


@pytest.fixture
def client(box: Box) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=box.url(8091), headers=headers, timeout=180) as http:
        yield http


def run(client: httpx.Client, code: str, session_id: str | None = None, **extra: Any) -> dict[str, Any]:
    response = client.post("/v2/code/execute", json={"code": code, "session_id": session_id, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def png_of(output: dict[str, Any]) -> bytes:
    assert output["output_type"] == "display_data", output
    png = base64.b64decode(output["data"]["image/png"], validate=True)
    image = decode_png(png)
    assert image.width > 200 and image.height > 150, (image.width, image.height)  # the figure, cropped tight
    return png


def test_figures_tables_and_errors_come_back_rich(client: httpx.Client) -> None:
    for session in (None, "rich"):
        figure = run(client, FIGURE, session)
        assert figure["success"] is True, figure
        [shown] = figure["data"]["outputs"]
        assert png_of(shown).startswith(SIGNATURE)
        table = run(client, FRAME, session)["data"]
        [result] = table["outputs"]
        assert result["output_type"] == "execute_result" and "<table" in result["data"]["text/html"]
        assert "revenue" in result["data"]["text/plain"]
        failed = run(client, "def f():\n    return {}['missing']\nf()", session)
        assert failed["success"] is False and failed["data"]["status"] == "error"
        [error] = failed["data"]["outputs"]
        assert (error["output_type"], error["ename"]) == ("error", "KeyError")
        assert any("['missing']" in line for line in error["traceback"])
    info = v2_data(client.get("/v2/code/info"))
    assert {language["language"]: language["backend"] for language in info["languages"]}["python"] == "kernel"


def test_a_session_keeps_state_and_a_killed_kernel_is_lost_then_restarted(client: httpx.Client, box: Box) -> None:
    assert run(client, "import os\ntotal = 40", "k")["success"]
    pid = int(run(client, "total += 2\nprint(os.getpid())", "k")["data"]["stdout"])
    assert run(client, "total", "k")["data"]["outputs"][0]["data"]["text/plain"] == "42"
    code, output = box.exec(f"kill -9 {pid}", user="sandbox")
    assert code == 0, output
    deadline = time.monotonic() + 30
    while box.exec(f"test -d /proc/{pid} && ! grep -q '^State:.*Z' /proc/{pid}/status")[0] == 0:
        assert time.monotonic() < deadline, "the kernel did not die"
        time.sleep(0.05)
    lost = run(client, "print(total)", "k")
    assert lost["success"] is False and lost["data"]["outputs"][0]["ename"] == "SessionLost", lost
    assert "killed by signal 9" in lost["data"]["outputs"][0]["evalue"]
    fresh = run(client, "print(os.getpid() if 'os' in globals() else 'fresh')", "k")["data"]
    assert fresh["stdout"] == "fresh\n"
    died = run(client, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "k")
    assert died["data"]["outputs"][-1]["ename"] == "ProcessExited", died
    assert run(client, "print('again')", "k")["data"]["stdout"] == "again\n"
    assert v2_data(client.delete("/v2/code/sessions/k"))["session_id"] == "k"


@pytest.fixture
async def mcp(box: Box) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(180)) as http:
        async with Client(streamable_http_client(box.url(8091, "/mcp"), http_client=http)) as session:
            yield session


@pytest.mark.anyio
async def test_mcp_shows_a_figure_as_an_image_block(mcp: Client) -> None:
    figure = await mcp.call_tool("sandbox_execute_code", {"language": "python", "code": FIGURE})
    assert not figure.is_error, figure
    [image] = figure.content
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert decode_png(base64.b64decode(image.data)).width > 200
    table = await mcp.call_tool("sandbox_execute_code", {"code": FRAME})
    assert any(
        isinstance(block, types.EmbeddedResource) and "<table" in getattr(block.resource, "text", "")
        for block in table.content
    ), table
