"""Talking to a real gateway's ``/v2`` surface with plain httpx, as AIO's documentation does."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app


def v2_data(response: httpx.Response) -> Any:
    """The ``data`` of a successful v2 envelope: 200 and ``success: true`` (else the body in the failure)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True, body
    return body["data"]


@contextlib.contextmanager
def gateway_client(settings: GatewaySettings) -> Iterator[httpx.Client]:
    """A gateway of its own for ``settings`` a test varies, and a client on its base URL."""
    with serve_app(build_app(settings)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client
