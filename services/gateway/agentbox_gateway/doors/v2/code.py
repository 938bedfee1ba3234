"""``/v2/code``: aiod's one entry point for Python and JavaScript over the code plane.

``POST /v2/code/execute`` runs a cell, stateless or in the session ``session_id`` names (made on first
use; a Python session is a Jupyter kernel), and answers Jupyter's output model with only the keys an
output type uses (``stream``, ``execute_result`` and ``display_data`` with MIME bundles, ``error``).
A cell that ran and failed is HTTP 200 with ``success: false`` and ``data.status`` ``error`` or
``timeout``; a bad body is 422, an unknown session 404, too many sessions 429, no interpreter 503.
``GET /v2/code/sessions`` lists the sessions, ``DELETE /v2/code/sessions/{id}`` ends one, and
``GET /v2/code/info`` tells the languages, their backends and the limits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter
from pydantic import Field

from ...planes.code import DEFAULT_TIMEOUT, MAX_TIMEOUT, SESSION_IDLE, CodeSessionNotFound, Execution, SessionInfo
from ...planes.code.plane import OUTPUT_CHARS
from ..rest.bodies import CODE_SESSION_ID, StrictBody
from ..rest.envelope import error_responses, failed, ok

if TYPE_CHECKING:
    from ...planes import Planes


class ExecuteCode(StrictBody):
    language: Literal["python", "javascript"] = Field("python", description="python or javascript")
    code: str = Field(description="the cell's source; an empty one runs and answers ok")
    session_id: str | None = Field(
        None,
        description="keep state across calls in this session (made on first use); none: a fresh interpreter",
        pattern=CODE_SESSION_ID,
    )
    timeout: float = Field(DEFAULT_TIMEOUT, ge=1, le=MAX_TIMEOUT, description="seconds, then the cell is stopped")


def execution_data(execution: Execution) -> dict[str, Any]:
    return {
        "code": execution.code,
        "language": execution.language,
        "status": execution.status,
        "execution_count": execution.execution_count,
        "exit_code": execution.exit_code,
        "outputs": execution.outputs(),
        "stdout": execution.stdout,
        "stderr": execution.stderr,
        "session_id": execution.session_id,
    }


def _session(info: SessionInfo) -> dict[str, Any]:
    return {
        "session_id": info.session_id,
        "language": info.language,
        "backend": info.backend,
        "cwd": info.cwd,
        "state": info.state,
        "execution_count": info.execution_count,
        "created_at": info.created_at,
        "last_used": info.last_used,
        "idle_seconds": info.idle_seconds,
        "max_idle_seconds": info.max_idle,
    }


def router(planes: Planes) -> APIRouter:
    plane = planes.code
    api = APIRouter(prefix="/v2/code", tags=["v2 code"], responses=error_responses(404, 429, 503))

    async def backend(language: str) -> str:
        return "kernel" if language == "python" and await plane.kernel_backend() else "native"

    @api.post("/execute")
    async def execute(body: ExecuteCode) -> dict[str, Any]:
        """Run ``code``; a figure is a ``display_data`` with ``image/png`` (base64), a DataFrame an
        ``execute_result`` with ``text/html``, an exception an ``error`` with its traceback."""
        execution = await plane.execute(body.language, body.code, timeout=body.timeout, session_id=body.session_id)
        data = execution_data(execution)
        if execution.status == "ok":
            return ok(data, "ok")  # the message aiod's documentation shows
        error = execution.error
        return failed(f"{error.ename}: {error.evalue}" if error else f"Execution {execution.status}", data)

    @api.get("/sessions")
    async def sessions() -> dict[str, Any]:
        """The open sessions, each with its language, backend, state and idle time."""
        listed = [_session(info) for info in await plane.list_sessions()]
        return ok({"sessions": listed, "count": len(listed)})

    @api.delete("/sessions/{session_id}")
    async def delete_session(session_id: str) -> dict[str, Any]:
        """End a session and its interpreter (404 when there is none of that id)."""
        try:
            await plane.delete_session(session_id)
        except CodeSessionNotFound:
            raise CodeSessionNotFound(f"no code session {session_id!r}") from None
        return ok({"session_id": session_id}, "Session deleted")

    @api.get("/info")
    async def info() -> dict[str, Any]:
        """The languages that run here (version, executable, backend) and the limits."""
        languages = [
            {
                "language": runtime.language,
                "version": runtime.version,
                "executable": runtime.executable,
                "backend": await backend(runtime.language),
                "session_idle_timeout_seconds": int(
                    plane.kernel_idle if await backend(runtime.language) == "kernel" else SESSION_IDLE[runtime.language]
                ),
            }
            for runtime in await plane.runtimes()
        ]
        return ok(
            {
                "languages": languages,
                "default_timeout": DEFAULT_TIMEOUT,
                "max_timeout": MAX_TIMEOUT,
                "max_output_chars": OUTPUT_CHARS,
                "max_sessions": plane.max_sessions,
                "kernel": {
                    "max_sessions": plane.kernel_max_sessions,
                    "session_timeout_seconds": int(plane.kernel_idle),
                    "prewarm": plane.kernel_prewarm,
                    "warm": plane.spare_kernels,
                },
                "active_sessions": plane.session_count,
            }
        )

    return api
