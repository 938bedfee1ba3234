"""A gateway that only serves MCP stays lean: building it loads neither FastAPI (the REST door is
built by its first request) nor aiohttp (loaded by the first upstream call or preview), and the
REST door still answers its first request."""

from __future__ import annotations

import subprocess
import sys

import httpx

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support.servers import serve_app

PROBE = """
import sys
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
build_app(GatewaySettings())
print(sorted({name.split(".")[0] for name in sys.modules} & {"fastapi", "aiohttp"}))
"""


def test_building_the_gateway_loads_neither_fastapi_nor_aiohttp() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_the_rest_door_answers_its_first_request(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(gateway_settings)) as base:
        assert httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 200
        first = httpx.get(f"{base}/v1/sandbox", timeout=30)
        assert first.status_code == 200 and first.json()["success"] is True
        assert httpx.get(f"{base}/v1/openapi.json").json()["info"]["title"] == "agentbox sandbox API"
