"""API mode's one answer to the planes' errors: every :class:`~agentbox_common.errors.PlaneError`
a route lets through (``/run``, ``/files``) becomes ``{"detail": message}`` with the status of its
kind (:data:`~agentbox_common.http_status.HTTP_STATUS`, as on the gateway), from one exception
handler. The OpenAI endpoint answers in OpenAI's error shape instead
(:func:`~.routes_openai.openai_problem`)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse

from agentbox_common.errors import PlaneError
from agentbox_common.http_status import HTTP_STATUS
from agentbox_common.workspace_files import DiskFull

from ..run_service import RunRefused

#: Where aicodebox's API answers other than by kind: a refused ``/run`` body is 422 like FastAPI's
#: own validation errors; a full disk keeps its own status (507, which no kind has).
STATUS_OF_ERROR: dict[type[PlaneError], int] = {RunRefused: 422, DiskFull: 507}


def http_status(exc: PlaneError) -> int:
    return next((code for cls, code in STATUS_OF_ERROR.items() if isinstance(exc, cls)), HTTP_STATUS[exc.kind])


def install_error_handler(app: FastAPI) -> None:
    @app.exception_handler(PlaneError)
    async def plane_error(request: Request, exc: PlaneError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=http_status(exc))
