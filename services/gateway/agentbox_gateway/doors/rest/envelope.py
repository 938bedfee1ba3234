"""AIO's response envelope ``{"success", "message", "data", "hint"}``, its error handlers, and the
OpenAPI description of the error answers (so ``/v1/openapi.json`` documents every status we send)."""

from __future__ import annotations

import re
from typing import Any, Generic, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import get_route_path  # type: ignore[attr-defined]  # used there, not re-exported

from agentbox_common.errors import PlaneError
from agentbox_common.http_status import http_status

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    success: bool = True
    message: str = "Operation successful"
    data: T | None = None
    hint: str | None = None


class ErrorEnvelope(BaseModel):
    """The body of every HTTP error answer: the envelope with ``success: false``."""

    success: bool = False
    message: str
    data: Any = None
    hint: str | None = None


#: What each error status means on ``/v1/*``; routers document the ones they can answer.
ERROR_DESCRIPTIONS = {
    400: "Bad request: an unparsable body or a value the operation refuses",
    401: "Missing or wrong API key (AIO_API_KEY is set)",
    403: "Origin not allowed",
    404: "Unknown session, command or file",
    408: "The awaited condition did not come true within the timeout",
    409: "Conflict: the session exists already or is busy",
    413: "Too large",
    421: "Host not allowed (without AIO_API_KEY, or with AIO_ALLOWED_HOSTS set)",
    429: "A limit is reached (sessions, watchers)",
    502: "The browser program or an upstream MCP server failed the operation",
    503: "The plane's runtime is not available (interpreter or browser missing)",
    504: "The operation did not finish in time",
    507: "No space left on the device",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a router or route: each status with its description and envelope schema
    (FastAPI documents 422 itself; our 422 body carries its ``detail`` list)."""
    return {code: {"model": ErrorEnvelope, "description": ERROR_DESCRIPTIONS[code]} for code in codes}


def ok(data: Any = None, message: str = "Operation successful") -> dict[str, Any]:
    return {"success": True, "message": message, "data": data, "hint": None}


def failed(message: str, data: Any = None, hint: str | None = None) -> dict[str, Any]:
    """Understood but failed: HTTP 200 with ``success: false`` (AIO v1's convention)."""
    return {"success": False, "message": message, "data": data, "hint": hint}


class RestError(Exception):
    """An HTTP error with an envelope body (404 unknown session, 503 plane down, ...)."""

    def __init__(self, status_code: int, message: str, hint: str | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.hint = hint
        self.data = data


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation_failed(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        body = failed("Request data validation failed")
        body["errors"] = [
            {"location": list(e.get("loc", ())), "message": e.get("msg", ""), "type": e.get("type", "")} for e in errors
        ]
        body["detail"] = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors
        ]
        return JSONResponse(body, status_code=422)

    @app.exception_handler(PlaneError)
    async def plane_error(request: Request, exc: PlaneError) -> JSONResponse:
        # A route whose contract says otherwise (the file routes' ``200 success:false``, fixed by
        # the SDK) catches its errors itself.
        return JSONResponse(failed(exc.message, hint=exc.hint), status_code=http_status(exc))

    @app.exception_handler(RestError)
    async def rest_error(request: Request, exc: RestError) -> JSONResponse:
        return JSONResponse(failed(exc.message, exc.data, exc.hint), status_code=exc.status_code)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        headers = exc.headers
        allowed = _allowed_methods(request) if exc.status_code == 405 else None
        if allowed:
            headers = {**(headers or {}), "Allow": allowed}
        return JSONResponse(failed(str(exc.detail)), status_code=exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> str | None:
    """The methods the surface's OpenAPI document lists for this path. Starlette's 405 names only the first
    matching route's methods (``GET`` for ``/v1/shell/sessions``, which also serves DELETE); a literal
    path shadows a template that also matches it (``/v1/shell/sessions/create`` is not a session id)."""
    paths: dict[str, dict[str, Any]] = request.app.openapi()["paths"]
    path = get_route_path(request.scope)
    if path in paths:
        return ", ".join(method.upper() for method in paths[path])
    methods = [
        method.upper()
        for template, operations in paths.items()
        if re.fullmatch(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template)), path)
        for method in operations
    ]
    return ", ".join(dict.fromkeys(methods)) or None
