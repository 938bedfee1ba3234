"""REST door of the code plane: ``/v1/code/*``, ``/v1/jupyter/*`` and ``/v1/nodejs/*`` as the
``agent-sandbox`` SDK calls them. A cell that ran and failed is HTTP 200 with ``success: false`` and
``data.status`` ``error`` or ``timeout`` (the traceback in ``outputs``); a refused request is an HTTP
error (400 bad value, 404 unknown session, 429 too many sessions, 503 interpreter missing).

Every route answers Jupyter's output model (MIME bundles: a figure is ``image/png``, a DataFrame
``text/html``). Python sessions, the Jupyter routes' among them, are ipykernel kernels where the
sandbox's Python has ipykernel (the image's does), else the plane's own REPL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import Field

from ...planes.code import DEFAULT_TIMEOUT, MAX_TIMEOUT, SESSION_IDLE, CodePlane, Execution, SessionInfo
from .bodies import CODE_SESSION_ID, StrictBody, documented
from .envelope import error_responses, failed, ok

if TYPE_CHECKING:
    from ...planes import Planes

#: The longest a Node.js REPL may stay idle, in seconds (a week): its info reports it in integer milliseconds.
MAX_IDLE_TIME = 7 * 24 * 3600.0
_DESCRIPTIONS = {
    "python": "Python interpreter: stateless calls on a warm fork server, or stateful sessions (Jupyter kernels)",
    "javascript": "Node.js: stateless calls on a pre-started node, or stateful REPL sessions",
}


#: The plane's bounds on a run's timeout (seconds), documented; the plane refuses others with 400.
_TIMEOUT: dict[str, Any] = {"minimum": 1, "maximum": MAX_TIMEOUT, "description": "seconds"}


class CodeExecuteRequest(StrictBody):
    language: str = "python"
    code: str
    timeout: float | None = Field(None, json_schema_extra=_TIMEOUT)
    cwd: str | None = None
    stateful: bool | None = None
    session_id: str | None = Field(None, json_schema_extra=documented(CODE_SESSION_ID))


class JupyterExecuteRequest(StrictBody):
    code: str
    timeout: float | None = Field(None, json_schema_extra=_TIMEOUT)
    kernel_name: str | None = None
    session_id: str | None = Field(None, json_schema_extra=documented(CODE_SESSION_ID))
    cwd: str | None = None


class JupyterCreateSessionRequest(StrictBody):
    session_id: str | None = Field(None, json_schema_extra=documented(CODE_SESSION_ID))
    kernel_name: str | None = None
    cwd: str | None = None


class NodeJsExecuteRequest(StrictBody):
    code: str
    timeout: float | None = Field(None, json_schema_extra=_TIMEOUT)
    stdin: str | None = None
    files: dict[str, str | None] | None = None
    stateful: bool | None = None
    session_id: str | None = Field(None, json_schema_extra=documented(CODE_SESSION_ID))
    cwd: str | None = None
    version: str | None = None


class NodeJsCreateSessionRequest(StrictBody):
    session_id: str | None = Field(None, json_schema_extra=documented(CODE_SESSION_ID))
    cwd: str | None = None
    max_idle_time: float | None = Field(None, gt=0, le=MAX_IDLE_TIME, description="seconds")


class NodeJsUpdateSessionRequest(StrictBody):
    cwd: str | None = None
    max_idle_time: float | None = None  # seconds


def _envelope(execution: Execution, data: dict[str, Any]) -> dict[str, Any]:
    if execution.status == "ok":
        return ok(data)
    error = execution.error
    message = f"{error.ename}: {error.evalue}" if error is not None else f"Execution {execution.status}"
    return failed(message, data)


#: The keys every ``/v1/jupyter`` output object carries, ``null`` where they do not apply (AIO's v1
#: shape: a client reads ``outputs[i].text`` or ``.data`` without branching on the type first).
JUPYTER_OUTPUT_KEYS = (
    "output_type",
    "name",
    "text",
    "data",
    "metadata",
    "execution_count",
    "ename",
    "evalue",
    "traceback",
)


def _dense(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: output.get(key) for key in JUPYTER_OUTPUT_KEYS} for output in outputs]


def _code_data(execution: Execution) -> dict[str, Any]:
    return {
        "language": execution.language,
        "status": execution.status,
        "code": execution.code,
        "outputs": execution.outputs(),
        "stdout": execution.stdout,
        "stderr": execution.stderr,
        "exit_code": execution.exit_code,
        "traceback": list(execution.error.traceback) if execution.error else None,
        "session_id": execution.session_id,
        "execution_count": execution.execution_count,
    }


def _max_sessions(plane: CodePlane, language: str, kernels: bool) -> int:
    """Sessions a language may have open: Python's kernels have their own, lower limit."""
    if language == "python" and kernels:
        return min(plane.max_sessions, plane.kernel_max_sessions)
    return plane.max_sessions


def _idle(plane: CodePlane, language: str, kernels: bool) -> float:
    return plane.kernel_idle if language == "python" and kernels else SESSION_IDLE[language]


def _node_session(info: SessionInfo) -> dict[str, Any]:
    """Node.js REPL session info: timestamps and idle limit in milliseconds, as the SDK documents."""
    return {
        "session_id": info.session_id,
        "cwd": info.cwd,
        "created_at": info.created_at * 1000,
        "last_used": info.last_used * 1000,
        "max_idle_time": int(info.max_idle * 1000),
        "age_seconds": info.idle_seconds,  # "seconds since last activity" in the Node.js API
        "state": info.state,
    }


def router(planes: Planes) -> APIRouter:
    plane = planes.code
    api = APIRouter(responses=error_responses(400, 404, 429, 503))

    # -- /v1/code --------------------------------------------------------------------------------

    @api.post("/v1/code/execute")
    async def execute_code(body: CodeExecuteRequest) -> dict[str, Any]:
        execution = await plane.execute(
            body.language,
            body.code,
            timeout=body.timeout,
            cwd=body.cwd,
            session_id=body.session_id,
            stateful=bool(body.stateful),
        )
        return _envelope(execution, _code_data(execution))

    @api.get("/v1/code/info")
    async def code_info() -> dict[str, Any]:
        kernels = await plane.kernel_backend()
        languages = [
            {
                "language": runtime.language,
                "description": _DESCRIPTIONS[runtime.language],
                "runtime_version": runtime.version,
                "default_timeout": DEFAULT_TIMEOUT,
                "max_timeout": MAX_TIMEOUT,
                "details": {
                    "executable": runtime.executable,
                    "stateful": True,
                    "max_sessions": _max_sessions(plane, runtime.language, kernels),
                    "session_idle_timeout_seconds": int(_idle(plane, runtime.language, kernels)),
                },
            }
            for runtime in await plane.runtimes()
        ]
        return ok({"languages": languages})

    # -- /v1/jupyter -----------------------------------------------------------------------------

    @api.post("/v1/jupyter/execute")
    async def jupyter_execute(body: JupyterExecuteRequest) -> dict[str, Any]:
        kernel_name = await plane.kernel(body.kernel_name)
        # Stateful as a Jupyter kernel is: without a session_id a session is made, and its id answered.
        execution = await plane.execute(
            "python", body.code, timeout=body.timeout, cwd=body.cwd, session_id=body.session_id, stateful=True
        )
        data = {
            "kernel_name": kernel_name,
            "session_id": execution.session_id,
            "status": execution.status,
            "execution_count": execution.execution_count,
            "outputs": _dense(execution.outputs()),
            "code": execution.code,
        }
        return _envelope(execution, data)

    @api.get("/v1/jupyter/info")
    async def jupyter_info() -> dict[str, Any]:
        runtime = await plane.runtime("python")
        kernels = await plane.kernels()
        sessions = await plane.list_sessions("python")
        backend = await plane.kernel_backend()
        served = (
            "sessions are ipykernel kernels, driven with jupyter_client"
            if backend
            else "ipykernel is not installed: sessions run on agentbox's own interpreter workers"
        )
        return ok(
            {
                "default_kernel": "python3",
                "available_kernels": kernels,
                "active_sessions": len(sessions),
                "session_timeout_seconds": int(_idle(plane, "python", backend)),
                "max_sessions": _max_sessions(plane, "python", backend),
                "description": "Python execution with Jupyter's outputs (MIME bundles) and persistent sessions",
                "kernel_detection": f"python3 on PATH: {runtime.executable} (Python {runtime.version}); {served}",
            }
        )

    @api.post("/v1/jupyter/sessions/create")
    async def jupyter_create_session(body: JupyterCreateSessionRequest) -> dict[str, Any]:
        kernel_name = await plane.kernel(body.kernel_name)
        info, created = await plane.create_session("python", body.session_id, cwd=body.cwd)
        message = "Session created" if created else "Session already exists"
        return ok({"session_id": info.session_id, "kernel_name": kernel_name, "message": message}, message)

    @api.get("/v1/jupyter/sessions")
    async def jupyter_sessions() -> dict[str, Any]:
        sessions = await plane.list_sessions("python")
        return ok(
            {
                "sessions": {
                    s.session_id: {"kernel_name": "python3", "last_used": s.last_used, "age_seconds": s.age_seconds}
                    for s in sessions
                }
            }
        )

    @api.delete("/v1/jupyter/sessions/{session_id}")
    async def jupyter_delete_session(session_id: str) -> dict[str, Any]:
        await plane.delete_session(session_id, "python")
        return ok({"session_id": session_id}, "Session deleted")

    @api.delete("/v1/jupyter/sessions")
    async def jupyter_delete_sessions() -> dict[str, Any]:
        count = await plane.delete_sessions("python")
        return ok({"deleted": count}, f"{count} session(s) deleted")

    # -- /v1/nodejs ------------------------------------------------------------------------------

    @api.post("/v1/nodejs/execute")
    async def nodejs_execute(body: NodeJsExecuteRequest) -> dict[str, Any]:
        await plane.check_node_version(body.version)
        execution = await plane.execute(
            "javascript",
            body.code,
            timeout=body.timeout,
            cwd=body.cwd,
            session_id=body.session_id,
            stateful=bool(body.stateful),
            stdin=body.stdin,
            files=body.files,
        )
        data = {
            "language": "javascript",
            "status": execution.status,
            "execution_count": execution.execution_count,
            "outputs": execution.outputs(),
            "code": execution.code,
            "stdout": execution.stdout,
            "stderr": execution.stderr,
            "exit_code": execution.exit_code,
            "session_id": execution.session_id,
        }
        return _envelope(execution, data)

    @api.get("/v1/nodejs/info")
    async def nodejs_info() -> dict[str, Any]:
        runtime = await plane.runtime("javascript")
        versions = await plane.node_versions()
        return ok(
            {
                "node_version": f"v{runtime.version}",
                "npm_version": await plane.npm_version() or "",
                "supported_languages": ["javascript"],
                "description": "Node.js execution: stateless calls or persistent REPL sessions",
                "runtime_directory": os.path.dirname(runtime.executable),
                "available_versions": versions,
                "current_version": versions[0],
            }
        )

    @api.get("/v1/nodejs/sessions")
    async def nodejs_sessions() -> dict[str, Any]:
        sessions = await plane.list_sessions("javascript")
        return ok({"sessions": {s.session_id: _node_session(s) for s in sessions}})

    @api.post("/v1/nodejs/sessions")
    async def nodejs_create_session(body: NodeJsCreateSessionRequest) -> dict[str, Any]:
        info, created = await plane.create_session(
            "javascript", body.session_id, cwd=body.cwd, max_idle=body.max_idle_time
        )
        message = "Session created" if created else "Session already exists"
        return ok(
            {"session_id": info.session_id, "created": created, "message": message, "session": _node_session(info)},
            message,
        )

    @api.get("/v1/nodejs/sessions/{session_id}")
    async def nodejs_session(session_id: str) -> dict[str, Any]:
        info = await plane.get_session(session_id, "javascript")
        return ok({"session": _node_session(info)})

    @api.patch("/v1/nodejs/sessions/{session_id}")
    async def nodejs_update_session(session_id: str, body: NodeJsUpdateSessionRequest) -> dict[str, Any]:
        """Change the session's ``max_idle_time`` and/or ``cwd``; ``{updated, session}``."""
        info = await plane.update_session(session_id, "javascript", cwd=body.cwd, max_idle=body.max_idle_time)
        return ok({"updated": True, "session": _node_session(info)}, "Session updated")

    @api.delete("/v1/nodejs/sessions/{session_id}")
    async def nodejs_delete_session(session_id: str) -> dict[str, Any]:
        await plane.delete_session(session_id, "javascript")
        return ok({"deleted": True}, "Session deleted")

    return api
