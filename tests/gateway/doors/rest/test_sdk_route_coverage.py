"""Every route the installed agent-sandbox SDK calls is served (listed in ``/v1/openapi.json``). The
test fails when an SDK upgrade adds a route the gateway does not serve."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import agent_sandbox

from tests.support import shared_http

#: The SDK talks to these outside ``/v1`` (AIO's hosted ticket/auth service), not to a sandbox.
NOT_SANDBOX_ROUTES = {("GET", "/auth"), ("POST", "/tickets")}

_PARAMETER = re.compile(r"\{[^}]*\}")


def _path(node: ast.expr) -> str | None:
    """The route of a ``request("v1/…")`` / ``request(f"v1/{…}")`` call, parameters as ``{}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def sdk_routes() -> set[tuple[str, str]]:
    """(method, path) of every HTTP call in the installed SDK's raw clients, read from their code."""
    routes: set[tuple[str, str]] = set()
    for source in Path(agent_sandbox.__file__).parent.rglob("raw_client.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("request", "stream") or not node.args:
                continue
            path = _path(node.args[0])
            method = next((k.value.value for k in node.keywords if k.arg == "method"), None)
            if path is not None and isinstance(method, str):
                routes.add((method.upper(), "/" + path.lstrip("/")))
    return routes


def served_routes(gateway: str) -> set[tuple[str, str]]:
    spec = shared_http.get(f"{gateway}/v1/openapi.json", timeout=10).json()
    return {
        (method.upper(), _PARAMETER.sub("{}", path))
        for path, operations in spec["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }


def test_the_sdk_is_read_completely() -> None:
    routes = sdk_routes()
    assert len(routes) >= 129, len(routes)  # SDK 0.0.30 calls 129 sandbox routes (+ 2 outside)
    assert NOT_SANDBOX_ROUTES <= routes


def test_every_sdk_route_is_served(gateway: str) -> None:
    missing = sorted(sdk_routes() - NOT_SANDBOX_ROUTES - served_routes(gateway))
    assert not missing, f"SDK routes the gateway does not serve: {missing}"
