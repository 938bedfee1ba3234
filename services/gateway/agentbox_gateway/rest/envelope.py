"""AIO's response envelope ``{"success", "message", "data", "hint"}`` and its error handlers."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Generic, TypeVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    success: bool = True
    message: str = "Operation successful"
    data: T | None = None
    hint: str | None = None


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


async def answer_or_raise(operation: Awaitable[T], statuses: Mapping[type[Exception], int]) -> T:
    """``operation``'s result; a plane error of a listed type becomes :class:`RestError` with its status
    (the first matching type wins: list subclasses before their bases)."""
    try:
        return await operation
    except tuple(statuses) as exc:
        status = next(code for kind, code in statuses.items() if isinstance(exc, kind))
        raise RestError(status, str(exc)) from None


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation_failed(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        body = failed("Request data validation failed")
        body["errors"] = [
            {"location": list(e.get("loc", ())), "message": e.get("msg", ""), "type": e.get("type", "")}
            for e in errors
        ]
        body["detail"] = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors
        ]
        return JSONResponse(body, status_code=422)

    @app.exception_handler(RestError)
    async def rest_error(request: Request, exc: RestError) -> JSONResponse:
        return JSONResponse(failed(exc.message, exc.data, exc.hint), status_code=exc.status_code)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(failed(str(exc.detail)), status_code=exc.status_code, headers=exc.headers)
