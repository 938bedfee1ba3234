"""``/v1/shell/*`` and ``/v1/bash/*``: AIO's two command APIs over the shell plane, shaped exactly as
the ``agent-sandbox`` SDK parses them.

``/v1/shell`` reports one interleaved ``output`` and waits by ``timeout`` (then ``running``),
``no_change_timeout`` (then ``no_change_timeout``) and ``hard_timeout`` (kill); ``/v1/bash`` keeps
stdout and stderr apart with offsets for polling. Both write to a running command's stdin (a
trailing Ctrl-D, ``\\x04``, closes it). A non-zero exit is ``success: true`` with its ``exit_code``."""

from __future__ import annotations

import dataclasses
import signal
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import Field

from ...auth.guards import page_ticket
from ...planes import Planes
from ...planes.shell import OUTPUT_LIMIT, CommandRecord, InvalidRequest, ShellPlane, ShellSession
from ..shared.addresses import gateway_base, request_public_base
from ..web.terminal import TERMINAL_PREFIX
from .bodies import ENV_NAME, SHELL_SESSION_ID, StrictBody, documented
from .envelope import error_responses, ok
from .shell_stream import exec_stream, wants_events

#: ``/v1/bash`` sync results are cut to this many characters per stream unless told (0: never).
BASH_OUTPUT_LIMIT = 50_000
#: The longest a request may hold the connection waiting (``wait``, long polls).
MAX_WAIT = 300.0
DEFAULT_WAIT = 30.0

#: ``/v1/bash`` names the plane's statuses its own way.
_BASH_STATUS = {"hard_timeout": "timed_out", "terminated": "killed"}
DETACH = (
    "Start the command as an app outside every shell session (its own process group and kernel "
    "session, output in log_file): it outlives closing or cleaning up sessions and is stopped with "
    "`kill <pid>`. Returns at once with its pid; runs in exec_dir, else the session's directory."
)
_SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL, "SIGINT": signal.SIGINT}


def _seconds() -> Any:
    return Field(default=None, gt=0)


# -- request bodies ----------------------------------------------------------------------------


class ShellExecRequest(StrictBody):
    command: str
    id: str | None = None
    exec_dir: str | None = None
    async_mode: bool | None = None
    timeout: float | None = _seconds()
    strict: bool | None = None
    no_change_timeout: int | None = _seconds()
    hard_timeout: float | None = _seconds()
    preserve_symlinks: bool | None = None
    truncate: bool | None = None
    #: agentbox's own: start a long-running app outside every session (it outlives their cleanup).
    detach: bool | None = Field(None, description=DETACH)


class ShellIdRequest(StrictBody):
    id: str


class ShellWaitRequest(StrictBody):
    id: str
    seconds: int | None = Field(default=None, ge=0)
    max_wait_seconds: int | None = Field(default=None, ge=0)


class ShellWriteRequest(StrictBody):
    id: str
    input: str
    press_enter: bool = False


class ShellCreateSessionRequest(StrictBody):
    id: str | None = Field(None, json_schema_extra=documented(SHELL_SESSION_ID))
    exec_dir: str | None = None
    no_change_timeout: int | None = _seconds()
    preserve_symlinks: bool | None = None


class ShellUpdateSessionRequest(StrictBody):
    id: str
    no_change_timeout: int | None = _seconds()


class BashExecRequest(StrictBody):
    command: str
    session_id: str | None = None
    exec_dir: str | None = None
    env: dict[str, str | None] | None = Field(None, json_schema_extra={"propertyNames": {"pattern": ENV_NAME}})
    async_mode: bool | None = None
    timeout: float | None = _seconds()
    hard_timeout: float | None = _seconds()
    max_output_length: int | None = Field(default=None, ge=0)


class BashOutputRequest(StrictBody):
    session_id: str
    command_id: str | None = None
    offset: int | None = Field(default=None, ge=0)
    stderr_offset: int | None = Field(default=None, ge=0)
    wait: bool | None = None
    wait_timeout: float | None = Field(default=None, ge=0)


class BashWriteRequest(StrictBody):
    session_id: str
    input: str
    command_id: str | None = None


class BashKillRequest(StrictBody):
    session_id: str
    signal: Literal["SIGTERM", "SIGKILL", "SIGINT"] | None = None


class BashCreateSessionRequest(StrictBody):
    session_id: str | None = Field(None, json_schema_extra=documented(SHELL_SESSION_ID))
    exec_dir: str | None = None
    snapshot_path: str | None = None


# -- answers -----------------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def _shell_status(record: CommandRecord, outcome: str = "done") -> str:
    if record.done:
        return record.status
    return "no_change_timeout" if outcome == "no_change" else "running"


def _console(plane: ShellPlane, record: CommandRecord) -> dict[str, Any]:
    return {
        "ps1": f"{plane.prompt_prefix}:{record.cwd_before}$",
        "command": record.command,
        "output": record.output.text(OUTPUT_LIMIT),
    }


def _shell_session_info(session: ShellSession) -> dict[str, Any]:
    running = session.current
    return {
        "working_dir": session.cwd,
        "created_at": _iso(session.created_at),
        "last_used_at": _iso(session.last_used_at),
        "age_seconds": int((datetime.now(UTC) - session.created_at).total_seconds()),
        "status": "running" if running else "ready",
        "current_command": running.command if running else None,
    }


def _bash_session_info(session: ShellSession) -> dict[str, Any]:
    running = session.current
    return {
        "session_id": session.session_id,
        "status": "ready",
        "working_dir": session.cwd,
        "created_at": _iso(session.created_at),
        "last_used_at": _iso(session.last_used_at),
        "current_command": running.command if running else None,
        "command_count": session.command_count,
    }


def _bash_command(record: CommandRecord) -> dict[str, Any]:
    status = record.status if record.done else "running"
    return {
        "command_id": record.command_id,
        "command": record.command,
        "status": _BASH_STATUS.get(status, status),
        "exit_code": record.exit_code,
    }


def _bash_exec_result(record: CommandRecord, limit: int | None) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        **_bash_command(record),
        "stdout": record.stdout.text(limit),
        "stderr": record.stderr.text(limit),
        "offset": record.stdout.total,
        "stderr_offset": record.stderr.total,
    }


def router(planes: Planes) -> APIRouter:
    shell: ShellPlane = planes.shell
    api = APIRouter(tags=["shell"], responses=error_responses(400, 404, 409, 429, 503))

    # -- /v1/shell -----------------------------------------------------------------------------

    @api.post("/v1/shell/exec", response_model=None)
    async def shell_exec(body: ShellExecRequest, request: Request) -> dict[str, Any] | Any:
        if body.detach:
            return await detach(body)
        session = await shell.session_or_create(body.id, preserve_symlinks=bool(body.preserve_symlinks))
        record = await session.start(
            body.command,
            cwd=body.exec_dir,
            interactive=True,
            hard_timeout=body.hard_timeout,
            preserve_symlinks=body.preserve_symlinks,
            strict_cwd=bool(body.strict),
        )
        if not body.id:
            shell.release_when_done(session, record)
        limit = None if body.truncate is False else OUTPUT_LIMIT

        def answer(outcome: str) -> dict[str, Any]:
            return ok(
                {
                    "session_id": record.session_id,
                    "command": record.command,
                    "status": _shell_status(record, outcome),
                    "output": record.output.text(limit),
                    "exit_code": record.exit_code,
                }
            )

        if not body.async_mode and wants_events(request.headers.get("accept", "")):
            return exec_stream(record, body.timeout, answer)
        outcome = "running"
        if not body.async_mode:
            outcome = await record.wait(body.timeout, body.no_change_timeout or session.no_change_timeout)
        return answer(outcome)

    async def detach(body: ShellExecRequest) -> dict[str, Any]:
        clashing = [name for name in ("hard_timeout", "no_change_timeout", "timeout") if getattr(body, name)]
        if clashing:
            raise InvalidRequest(
                f"{', '.join(clashing)} cannot be combined with detach: a detached app is never waited for or timed out"
            )
        app = await shell.detach(body.command, cwd=body.exec_dir, session_id=body.id)
        return ok(
            {
                "session_id": body.id or "",
                "command": app.command,
                "status": "running",
                "output": "",
                "exit_code": None,
                "detached": True,
                "pid": app.pid,
                "cwd": app.cwd,
                "log_file": app.log_file,
            }
        )

    @api.post("/v1/shell/view")
    async def shell_view(body: ShellIdRequest) -> dict[str, Any]:
        session = await shell.session(body.id)
        last = session.last
        return ok(
            {
                "session_id": session.session_id,
                "output": last.output.text(OUTPUT_LIMIT) if last else "",
                "status": _shell_status(last) if last else "completed",
                "command": last.command if last else None,
                "exit_code": last.exit_code if last else None,
                "console": [_console(shell, record) for record in session.history],
            }
        )

    @api.post("/v1/shell/wait")
    async def shell_wait(body: ShellWaitRequest) -> dict[str, Any]:
        session = await shell.session(body.id)
        limits = [s for s in (body.seconds, body.max_wait_seconds) if s is not None]
        last = session.last
        if last is None:
            return ok({"status": "completed"})
        await last.wait(min([*limits, MAX_WAIT]) if limits else DEFAULT_WAIT)
        return ok({"status": _shell_status(last), "exit_code": last.exit_code})

    @api.post("/v1/shell/write")
    async def shell_write(body: ShellWriteRequest) -> dict[str, Any]:
        session = await shell.session(body.id)
        record = await session.write(body.input + ("\n" if body.press_enter else ""))
        return ok({"status": _shell_status(record)})

    @api.post("/v1/shell/kill")
    async def shell_kill(body: ShellIdRequest) -> dict[str, Any]:
        session = await shell.session(body.id)
        record = await session.send_signal(signal.SIGKILL)
        if record is None:
            return ok({"status": "completed", "exit_code": None, "returncode": None})
        return ok({"status": _shell_status(record), "exit_code": record.exit_code, "returncode": record.exit_code})

    @api.post("/v1/shell/sessions/create")
    async def shell_create_session(body: ShellCreateSessionRequest) -> dict[str, Any]:
        session = await shell.create_session(
            body.id,
            cwd=body.exec_dir,
            preserve_symlinks=bool(body.preserve_symlinks),
            no_change_timeout=body.no_change_timeout,
        )
        return ok({"session_id": session.session_id, "working_dir": session.cwd})

    @api.post("/v1/shell/sessions/update")
    async def shell_update_session(body: ShellUpdateSessionRequest) -> dict[str, Any]:
        session = await shell.session(body.id)
        if body.no_change_timeout is not None:
            session.no_change_timeout = body.no_change_timeout
        return ok(
            {
                "session_id": session.session_id,
                "no_change_timeout": session.no_change_timeout,
                **_shell_session_info(session),
            }
        )

    @api.get("/v1/shell/sessions")
    async def shell_list_sessions() -> dict[str, Any]:
        return ok({"sessions": {s.session_id: _shell_session_info(s) for s in shell.sessions()}})

    @api.get("/v1/shell/sessions/stats")
    async def shell_session_stats() -> dict[str, Any]:
        return ok(dataclasses.asdict(shell.stats()))

    @api.get("/v1/shell/terminal-url")
    async def shell_terminal_url(request: Request) -> dict[str, Any]:
        """The web terminal's page on the caller's address; for a key holder with a single-use
        ticket that signs a fresh browser in for that page (and its socket) only."""
        base = request_public_base(request, gateway_base(planes.settings))
        ticket = page_ticket(request.scope, TERMINAL_PREFIX)
        return ok(f"{base}{TERMINAL_PREFIX}" + (f"?{ticket}" if ticket else ""))

    @api.delete("/v1/shell/sessions")
    async def shell_cleanup_all() -> dict[str, Any]:
        return ok({"closed": await shell.close_all()})

    @api.delete("/v1/shell/sessions/{session_id}")
    async def shell_cleanup_session(session_id: str) -> dict[str, Any]:
        await shell.close_session(session_id)
        return ok({"session_id": session_id, "closed": True})

    # -- /v1/bash ------------------------------------------------------------------------------

    @api.post("/v1/bash/exec")
    async def bash_exec(body: BashExecRequest) -> dict[str, Any]:
        env = {k: v for k, v in (body.env or {}).items() if v is not None}
        if body.session_id:
            session = await shell.session(body.session_id)
        else:
            session = await shell.create_session(auto=True)
        record = await session.start(
            body.command,
            cwd=body.exec_dir,
            env=env,
            merged=False,
            interactive=bool(body.async_mode) or body.timeout is not None,
            hard_timeout=body.hard_timeout,
        )
        if not body.session_id:
            shell.release_when_done(session, record)
        if body.async_mode:
            return ok(_bash_exec_result(record, None))
        await record.wait(body.timeout)
        limit = BASH_OUTPUT_LIMIT if body.max_output_length is None else body.max_output_length
        return ok(_bash_exec_result(record, limit if record.done else None))

    @api.post("/v1/bash/output")
    async def bash_output(body: BashOutputRequest) -> dict[str, Any]:
        session = await shell.session(body.session_id)
        record = session.record(body.command_id)
        offset, stderr_offset = body.offset or 0, body.stderr_offset or 0
        if record is None:
            return ok(
                {
                    "session_id": session.session_id,
                    "stdout": "",
                    "stderr": "",
                    "offset": 0,
                    "stderr_offset": 0,
                    "command": None,
                }
            )
        if body.wait:
            wait = DEFAULT_WAIT if body.wait_timeout is None else min(body.wait_timeout, MAX_WAIT)
            await record.wait_for_output(offset, stderr_offset, wait)
        return ok(
            {
                "session_id": session.session_id,
                "stdout": record.stdout.read(offset),
                "stderr": record.stderr.read(stderr_offset),
                "offset": record.stdout.total,
                "stderr_offset": record.stderr.total,
                "command": _bash_command(record),
            }
        )

    @api.post("/v1/bash/write")
    async def bash_write(body: BashWriteRequest) -> dict[str, Any]:
        session = await shell.session(body.session_id)
        record = await session.write(body.input, body.command_id)
        return ok({"session_id": record.session_id, "command_id": record.command_id, "written": len(body.input)})

    @api.post("/v1/bash/kill")
    async def bash_kill(body: BashKillRequest) -> dict[str, Any]:
        name = body.signal or "SIGTERM"
        session = await shell.session(body.session_id)
        record = await session.send_signal(_SIGNALS[name])
        return ok(
            {"session_id": session.session_id, "signal": name, "command": _bash_command(record) if record else None}
        )

    @api.get("/v1/bash/sessions")
    async def bash_sessions() -> dict[str, Any]:
        return ok([_bash_session_info(s) for s in shell.sessions()])

    @api.post("/v1/bash/sessions/create")
    async def bash_create_session(body: BashCreateSessionRequest) -> dict[str, Any]:
        session = await shell.create_session(body.session_id, cwd=body.exec_dir, snapshot=body.snapshot_path)
        return ok(_bash_session_info(session))

    @api.post("/v1/bash/sessions/{session_id}/close")
    async def bash_close_session(session_id: str) -> dict[str, Any]:
        await shell.close_session(session_id)
        return ok({"session_id": session_id, "closed": True})

    return api
