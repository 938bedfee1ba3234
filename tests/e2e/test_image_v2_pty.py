"""``/v2/pty`` in the image, driven as AIO's documentation describes it (httpx and websockets only):
a terminal created with its own id runs as the sandbox user, a durable socket dropped mid-output
and reattached gets exactly the bytes it missed, and no socket opens without the key."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from .dockerbox import Box

pytestmark = pytest.mark.docker


def ws(box: Box, path: str) -> str:
    return box.url(8091, path).replace("http://", "ws://", 1)


def data(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["data"]


def frame(socket: ClientConnection) -> Any:
    message = socket.recv(timeout=30)
    return message if isinstance(message, bytes) else json.loads(message)


def test_a_durable_terminal_in_the_image(box: Box, auth: dict[str, str]) -> None:
    with httpx.Client(base_url=box.url(8091), headers=auth, timeout=60) as client:
        data(client.post("/v2/pty/sessions", json={"id": "e2e-pty"}))
        try:
            ran = data(client.post("/v2/pty/sessions/e2e-pty/exec", json={"command": "whoami"}))
            assert ran["exit_code"] == 0 and ran["output"] == "sandbox\n"

            with pytest.raises(InvalidStatus) as refused:
                connect(ws(box, "/v2/pty/sessions/e2e-pty/ws"), open_timeout=30).close()
            assert refused.value.response.status_code == 401

            url = ws(box, "/v2/pty/sessions/e2e-pty/ws?durable=true")
            before = ""
            with connect(url, additional_headers=auth, open_timeout=30) as first:
                assert frame(first)["resumed"] is False
                loop = "for i in $(seq 1 6); do echo tick $i; sleep 0.8; done\n"
                first.send(json.dumps({"type": "input", "data": loop}))
                while "tick 2\r\n" not in before:
                    message = frame(first)
                    assert message["type"] == "output", message
                    before += message["data"]
            assert "tick 3" not in before
            deadline = time.monotonic() + 30
            while data(client.get("/v2/pty/sessions/e2e-pty"))["status"] != "idle":
                assert time.monotonic() < deadline
                time.sleep(0.1)

            with connect(url, additional_headers=auth, open_timeout=30) as second:
                assert frame(second)["resumed"] is True
                resumed = frame(second)
                assert resumed["type"] == "relay_resumed" and resumed["dropped_bytes"] == 0
                missed = b""
                while len(missed) < resumed["missed_bytes"]:
                    missed += frame(second)["data"].encode()
            assert len(missed) == resumed["missed_bytes"]
            assert missed.startswith(b"tick 3\r\n") and b"tick 6\r\n" in missed

            with connect(ws(box, "/v2/pty/sessions/e2e-pty/ws?restore=true"), additional_headers=auth) as third:
                frame(third)
                assert frame(third)["data"].encode() == before.encode() + missed
        finally:
            client.delete("/v2/pty/sessions/e2e-pty")
