"""``/v1/util/convert_to_markdown`` through the agent-sandbox SDK (sync and async): a sandbox file, a
``file://`` URI and an ``http://`` URL (a local server) become Markdown; bad sources are 4xx."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_sandbox import AsyncSandbox, Sandbox
from agent_sandbox.types.response import Response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.support import shared_http
from tests.support.servers import serve_app

PAGE = "<html><head><title>Doc</title></head><body><h1>Report</h1><p>Some <b>bold</b> text.</p></body></html>"


async def page(request: Request) -> HTMLResponse:
    return HTMLResponse(PAGE)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_app(Starlette(routes=[Route("/doc", page)])) as url:
        yield url


@pytest.fixture
def client(gateway: str) -> Sandbox:
    return Sandbox(base_url=gateway, timeout=60)


def test_files_and_urls_become_markdown(client: Sandbox, tmp_path: Path, site: str) -> None:
    html = tmp_path / "report.html"
    html.write_text(PAGE)
    converted = client.util.convert_to_markdown(uri=str(html))
    assert isinstance(converted, Response) and converted.success is True
    assert converted.data == "# Report\n\nSome **bold** text."
    assert client.util.convert_to_markdown(uri=html.as_uri()).data == converted.data
    assert client.util.convert_to_markdown(uri=f"{site}/doc").data == converted.data
    table = tmp_path / "rows.csv"
    table.write_text("name,size\nalpha,1\n")
    assert "| name | size |" in client.util.convert_to_markdown(uri=str(table)).data
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"key": "value"}))
    assert '"key"' in client.util.convert_to_markdown(uri=str(data)).data


def test_the_async_client_too(gateway: str, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Title\n\nbody\n")

    async def scenario() -> str:
        return (await AsyncSandbox(base_url=gateway, timeout=60).util.convert_to_markdown(uri=str(note))).data

    assert "# Title" in asyncio.run(scenario())


@pytest.mark.parametrize(
    ("uri", "status"),
    [("/no/such/file.html", 404), ("ftp://example.com/x", 400), ("", 422), ("binary", 400), ("dead", 400)],
)
def test_bad_sources_are_4xx(gateway: str, tmp_path: Path, uri: str, status: int) -> None:
    if uri == "binary":
        blob = tmp_path / "blob.bin"
        blob.write_bytes(bytes(range(256)) * 8)
        uri = str(blob)
    if uri == "dead":
        with serve_app(Starlette()) as gone:
            pass
        uri = f"{gone}/doc"
    response = shared_http.post(f"{gateway}/v1/util/convert_to_markdown", json={"uri": uri}, timeout=60)
    assert response.status_code == status, response.text
    assert response.json()["success"] is False


def test_a_uri_no_answer_could_echo_is_400(gateway: str) -> None:
    """Lone surrogates (valid JSON escapes, not UTF-8) once made the error answer itself fail with 500."""
    body = b'{"uri": "~\\ud8a9\\udc5f"}'
    response = shared_http.post(
        f"{gateway}/v1/util/convert_to_markdown", content=body, headers={"Content-Type": "application/json"}, timeout=60
    )
    assert response.status_code == 400 and response.json()["success"] is False
