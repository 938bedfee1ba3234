"""JSON bodies on ``/v1/*`` are bounded (``AIO_MAX_JSON_BODY_BYTES``): a bigger one is a 413 envelope,
refused up front when ``Content-Length`` says so and counted as it arrives otherwise, so it is never
held whole, and it changes nothing. The default leaves room for the SDK's base64 file writes; multipart
uploads keep their own limit."""

from __future__ import annotations

import base64
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from agent_sandbox import Sandbox

from agentbox_gateway.app import build_app
from agentbox_gateway.doors.rest.bodies import MULTIPART_PATHS
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.servers import serve_app

HINT_NAMES = "AIO_MAX_JSON_BODY_BYTES"


@pytest.fixture
def small_bodies(gateway_settings: GatewaySettings) -> Iterator[str]:
    """A gateway whose JSON bodies may be 1,000 bytes, its uploads 100,000."""
    limits = GatewaySettings.from_env({"AIO_MAX_JSON_BODY_BYTES": "1000", "AIO_MAX_UPLOAD_BYTES": "100000"})
    settings = replace(
        gateway_settings, max_json_body_bytes=limits.max_json_body_bytes, max_upload_bytes=limits.max_upload_bytes
    )
    with serve_app(build_app(settings)) as url:
        yield url


def _refused(answer: httpx.Response) -> None:
    assert answer.status_code == 413, answer.text
    body = answer.json()
    assert body["success"] is False and body["data"] is None
    assert body["message"] == "Request body too large: JSON bodies on /v1/* are limited to 1000 bytes"
    assert HINT_NAMES in body["hint"]


def test_a_json_body_over_the_limit_is_413_and_changes_nothing(small_bodies: str, tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    small = shared_http.post(
        f"{small_bodies}/v1/file/write", json={"file": str(target), "content": "a" * 500}, timeout=30
    )
    assert small.json()["success"] is True and target.read_text() == "a" * 500

    big = {"file": str(target), "content": "b" * 2000}
    _refused(shared_http.post(f"{small_bodies}/v1/file/write", json=big, timeout=30))

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        payload = json.dumps(big).encode()
        for start in range(0, len(payload), 100):
            yield payload[start : start + 100]

    chunked = {"Content-Type": "application/json"}
    _refused(shared_http.post(f"{small_bodies}/v1/file/write", content=chunks(), headers=chunked, timeout=30))
    # any content type: a route reads the body whatever it is called
    as_text = {"Content-Type": "text/plain"}
    _refused(shared_http.post(f"{small_bodies}/v1/file/write", content=b"x" * 2000, headers=as_text, timeout=30))
    assert target.read_text() == "a" * 500

    hook = {"name": "big", "command": "true " * 400}
    _refused(shared_http.post(f"{small_bodies}/v1/sandbox/hooks", json=hook, timeout=30))
    assert shared_http.get(f"{small_bodies}/v1/sandbox/hooks", timeout=30).json()["data"] == []


def test_multipart_uploads_keep_their_own_limit(small_bodies: str, tmp_path: Path) -> None:
    client = Sandbox(base_url=small_bodies, timeout=30)
    uploaded = client.file.upload_file(file=("big.bin", b"u" * 50_000), path=str(tmp_path / "big.bin"))
    assert uploaded.success and (tmp_path / "big.bin").read_bytes() == b"u" * 50_000


def test_a_declared_length_over_the_default_limit_is_refused_before_the_body_is_sent(module_gateway: str) -> None:
    """100 MiB announced and not one byte sent: the 413 comes at once, nothing waits for the body."""
    address = urlsplit(module_gateway)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/file/write HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 104857600\r\n\r\n"
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = connection.recv(65536)
            assert chunk, answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 "), answer


def test_the_default_limit_lets_the_sdk_write_a_few_mib_as_base64(module_gateway: str, tmp_path: Path) -> None:
    payload = os.urandom(6 * 1024 * 1024)
    target = tmp_path / "blob.bin"
    client = Sandbox(base_url=module_gateway, timeout=60)
    written = client.file.write_file(file=str(target), content=base64.b64encode(payload).decode(), encoding="base64")
    assert written.success, written.message
    assert target.read_bytes() == payload


def test_the_uncapped_paths_are_exactly_the_multipart_routes(module_gateway: str) -> None:
    """Uncapped: the routes taking a multipart form or a tar stream (``/v2/fs/tree``), on both surfaces."""
    streamed_bodies = {"multipart/form-data", "application/x-tar"}
    uncapped = set()
    for surface in ("v1", "v2"):
        document = shared_http.get(f"{module_gateway}/{surface}/openapi.json", timeout=60).json()
        uncapped |= {
            path
            for path, operations in document["paths"].items()
            for operation in operations.values()
            if streamed_bodies & set(operation.get("requestBody", {}).get("content", {}))
        }
    assert uncapped == MULTIPART_PATHS
