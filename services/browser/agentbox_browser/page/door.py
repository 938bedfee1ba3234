"""The page plane's loopback door, for the gateway only: ``POST /page/{operation}`` with the arguments
as a JSON object, answered ``{"data": …}`` or ``{"error": message}`` with the status of the failure's kind
(:func:`~agentbox_common.http_status.http_status`; :func:`.errors.as_page_error` names the kind).

It sits beside ``/mcp`` on the same loopback port and session. Like the SDK's own DNS-rebinding
protection on ``/mcp``, it serves only loopback ``Host`` names and no browser ``Origin``, so a web page
(including one shown in this very browser) cannot drive it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentbox_common.http_status import http_status

from ..session import BrowserSession
from .errors import as_page_error
from .operations import OPERATIONS

logger = logging.getLogger(__name__)

_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]"}


def _loopback_host(request: Request) -> bool:
    host = request.headers.get("host", "")
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.lower() in _LOOPBACK_HOSTS


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def page_routes(session: BrowserSession, deadline: float) -> list[Route]:
    async def run(request: Request) -> JSONResponse:
        if not _loopback_host(request) or "origin" in request.headers:
            return _error(403, "the page door serves loopback clients without an Origin only")
        name = request.path_params["operation"]
        operation = OPERATIONS.get(name)
        if operation is None:
            return _error(404, f"unknown page operation {name!r}")
        try:
            arguments: Any = await request.json()
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return _error(400, "the body must be a JSON object of arguments")
        try:
            async with asyncio.timeout(deadline):
                return JSONResponse({"data": await operation(session, arguments)})
        except Exception as exc:
            error = as_page_error(exc, name, session.connected, deadline)
            if error is None:
                raise
            return _error(http_status(error), error.message)

    return [Route("/page/{operation}", run, methods=["POST"])]
