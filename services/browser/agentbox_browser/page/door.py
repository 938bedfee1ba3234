"""The page plane's loopback door, for the gateway only: ``POST /page/{operation}`` with the arguments
as a JSON object, answered ``{"data": …}`` or ``{"error": message}`` with the failure's status.

It sits beside ``/mcp`` on the same loopback port and session. Like the SDK's own DNS-rebinding
protection on ``/mcp``, it serves only loopback ``Host`` names and no browser ``Origin``, so a web page
(including one shown in this very browser) cannot drive it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from playwright.async_api import Error as PlaywrightError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..session import BrowserSession, BrowserUnavailable, first_line
from ..tools.base import ToolError
from ..tools.elements import ElementNotFound
from .errors import PageError
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
        except PageError as exc:
            return _error(exc.status, str(exc))
        except ElementNotFound as exc:
            return _error(404, str(exc))
        except ToolError as exc:
            return _error(400, str(exc))
        except BrowserUnavailable as exc:
            return _error(503, str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            return _error(400, f"bad arguments for {name}: {type(exc).__name__}: {exc}")
        except OSError as exc:  # a save path the sandbox user cannot write, a name too long, …
            return _error(400, f"{name} failed: {exc.strerror or exc}")
        except PlaywrightError as exc:
            if not session.connected:
                return _error(503, f"browser unavailable: {first_line(exc)}")
            return _error(400, f"{name} failed: {first_line(exc)}")
        except TimeoutError:
            return _error(504, f"{name} did not finish within {deadline:g} s")

    return [Route("/page/{operation}", run, methods=["POST"])]
