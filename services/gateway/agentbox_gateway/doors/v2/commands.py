"""``/v2/commands``: aiod's commands as resources over the shell plane's command registry.

``POST`` starts a command and answers its ``command_id`` with its output (``mode: "sync"``, the
default, once it ends), at once (``mode: "async"``), or as NDJSON while it runs (``"stream": true``
or ``Accept: application/x-ndjson``): a ``started`` line, ``stdout``/``stderr`` lines with the
offset of their text, a ``result`` line. ``GET …/{id}`` reads each stream from an offset (and long
polls with ``wait``); ``…/stdin`` and ``…/kill`` act on a running one. Sessions
(``/v2/commands/sessions``) are the plane's shell sessions, the ones ``sandbox_execute_bash`` and
``/v1/bash`` use, with an ``env`` every command in them gets."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import AliasChoices, Field, model_validator

from ...planes import Planes
from ...planes.shell import ShellSession
from ...planes.shell.commands import Command, CommandRequest
from ..rest.bodies import ENV_NAME, SHELL_SESSION_ID, StrictBody, documented
from ..rest.envelope import error_responses, ok

NDJSON = "application/x-ndjson"
#: The longest ``GET /v2/commands/{id}?wait=`` holds the connection (seconds).
MAX_WAIT = 300.0
#: The plane's reasons a command was stopped, as aiod names the statuses.
_STATUS = {"hard_timeout": "timed_out", "terminated": "killed"}
_SIGNALS = {name: getattr(signal, name) for name in ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT")}
_ENV = Field(None, json_schema_extra={"propertyNames": {"pattern": ENV_NAME}})


class RunCommand(StrictBody):
    command: str = Field(min_length=1, description="the command line (shell bash, sh), or the program (none)")
    shell: Literal["bash", "sh", "none"] = Field(
        "bash", description="bash (args are $1...), sh (sh -c command sh args...), none (run command with args)"
    )
    args: list[str] = Field(default_factory=list)
    cwd: str | None = Field(None, description="where it runs; relative: from the session's (or home) directory")
    env: dict[str, str] | None = _ENV
    mode: Literal["sync", "async"] = Field("sync", description="sync: answer at the end; async: answer at once")
    hard_timeout: float | None = Field(None, gt=0, description="seconds, then it is killed: status timed_out")
    timeout: float | None = Field(None, gt=0, description="sync: answer after this many seconds even if it runs on")
    session_id: str | None = Field(None, json_schema_extra=documented(SHELL_SESSION_ID))
    stream: bool = Field(False, description="answer NDJSON lines while it runs (as Accept: application/x-ndjson)")

    @model_validator(mode="after")
    def _one_answer(self) -> RunCommand:
        if self.stream and self.mode == "async":
            raise ValueError('stream and mode "async" exclude each other: stream answers while the command runs')
        return self


class WriteStdin(StrictBody):
    data: str = Field(validation_alias=AliasChoices("data", "input"), description="text for the command's stdin")
    eof: bool = Field(False, description="close stdin after the text (end of input)")


class KillCommand(StrictBody):
    signal: Literal["SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT"] = "SIGKILL"


class CreateSession(StrictBody):
    session_id: str | None = Field(None, json_schema_extra=documented(SHELL_SESSION_ID))
    cwd: str | None = None
    env: dict[str, str] | None = _ENV


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _state(command: Command) -> dict[str, Any]:
    record = command.record
    status = record.status if record.done else "running"
    ended = record.finished_at or datetime.now(UTC)
    return {
        "command_id": record.command_id,
        "session_id": command.session_id,
        "command": command.request.command,
        "shell": command.request.shell,
        "args": list(command.request.args),
        "status": _STATUS.get(status, status),
        "exit_code": record.exit_code,
        "cwd": record.cwd or record.cwd_before,
        "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at),
        "duration_ms": round((ended - record.started_at).total_seconds() * 1000),
    }


def _output(command: Command, stdout_offset: int = 0, stderr_offset: int = 0) -> dict[str, Any]:
    """The state with each stream from its offset; the answered offsets are where to read on from."""
    record = command.record
    return {
        **_state(command),
        "stdout": record.stdout.read(stdout_offset),
        "stderr": record.stderr.read(stderr_offset),
        "stdout_offset": record.stdout.total,
        "stderr_offset": record.stderr.total,
        "truncated": bool(record.stdout.dropped or record.stderr.dropped),
    }


def _session(session: ShellSession) -> dict[str, Any]:
    running = session.current
    return {
        "session_id": session.session_id,
        "cwd": session.cwd,
        "env_keys": sorted(session.env),
        "status": "running" if running else "ready",
        "current_command": running.command if running else None,
        "current_command_id": running.command_id if running else None,
        "command_count": session.command_count,
        "created_at": _iso(session.created_at),
        "last_used_at": _iso(session.last_used_at),
    }


def _line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def _ndjson(command: Command, wait: float | None) -> AsyncIterator[bytes]:
    """The command's lines: ``started``, its output as printed, ``result`` (also after ``wait``
    seconds, with the command still running). A client that goes away ends only its stream."""
    yield _line({"type": "started", **_state(command)})
    with anyio.move_on_after(wait):
        async for chunk in command.record.follow_streams():
            yield _line({"type": chunk.stream, "offset": chunk.offset, "data": chunk.text})
    record = command.record
    yield _line(
        {
            "type": "result",
            **_state(command),
            "stdout_offset": record.stdout.total,
            "stderr_offset": record.stderr.total,
        }
    )


def _wants_ndjson(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return NDJSON in accept or "application/jsonl" in accept


def router(planes: Planes) -> APIRouter:
    shell = planes.shell
    commands = shell.commands
    api = APIRouter(prefix="/v2/commands", tags=["v2 commands"], responses=error_responses(400, 404, 409, 429, 503))

    # -- sessions (before /{command_id}, which would take their paths) ----------------------------

    @api.post("/sessions")
    async def create_session(body: CreateSession) -> dict[str, Any]:
        """A shell session: ``cd`` and exported variables persist between its commands, and every
        command in it gets ``env``."""
        session = await shell.create_session(body.session_id, cwd=body.cwd, env=body.env)
        return ok(_session(session))

    @api.get("/sessions")
    async def list_sessions() -> dict[str, Any]:
        return ok([_session(session) for session in shell.sessions()])

    @api.get("/sessions/{session_id}")
    async def get_session(session_id: str) -> dict[str, Any]:
        return ok(_session(await shell.session(session_id)))

    @api.delete("/sessions/{session_id}")
    async def close_session(session_id: str) -> dict[str, Any]:
        """Close the session, killing what it still runs."""
        await shell.close_session(session_id)
        return ok({"session_id": session_id, "closed": True})

    # -- commands ---------------------------------------------------------------------------------

    @api.post(
        "",
        response_model=None,
        responses={200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": "the command"}},
    )
    async def run_command(body: RunCommand, request: Request) -> dict[str, Any] | StreamingResponse:
        """Run a command. ``data``: its state, ``stdout``, ``stderr`` and the offsets to read on from
        (``GET /v2/commands/{command_id}``). NDJSON when ``stream`` or ``Accept:
        application/x-ndjson``: ``started``, ``stdout``/``stderr`` (``offset``, ``data``), ``result``."""
        streamed = body.stream or (body.mode == "sync" and _wants_ndjson(request))
        command = await commands.start(
            CommandRequest(
                command=body.command,
                shell=body.shell,
                args=tuple(body.args),
                cwd=body.cwd,
                env=body.env or {},
                hard_timeout=body.hard_timeout,
                session_id=body.session_id,
                stdin=streamed or body.mode == "async",
            )
        )
        if streamed:
            return StreamingResponse(_ndjson(command, body.timeout), media_type=NDJSON)
        if body.mode == "sync":
            await command.record.wait(body.timeout)
        data = _output(command)
        return ok(data, message=f"command {data['status']}")

    @api.get("")
    async def list_commands() -> dict[str, Any]:
        """The commands running and those finished still kept (without their output)."""
        return ok([_state(command) for command in commands.list()])

    @api.get("/{command_id}")
    async def read_output(
        command_id: str,
        stdout_offset: int = Query(0, ge=0, description="read stdout from this character on"),
        stderr_offset: int = Query(0, ge=0, description="read stderr from this character on"),
        wait: float = Query(0, ge=0, le=MAX_WAIT, description="seconds to wait for output past the offsets"),
    ) -> dict[str, Any]:
        """The command's state and each stream from its offset; ``stdout_offset``/``stderr_offset``
        in the answer are where to read on from."""
        command = commands.get(command_id)
        if wait:
            await command.record.wait_for_output(stdout_offset, stderr_offset, wait)
        return ok(_output(command, stdout_offset, stderr_offset))

    @api.post("/{command_id}/stdin")
    async def write_stdin(body: WriteStdin, command_id: str) -> dict[str, Any]:
        """Write to a running command's stdin (it has one when started async or streamed)."""
        command = await commands.write(command_id, body.data, eof=body.eof)
        return ok({**_state(command), "written": len(body.data), "eof": body.eof})

    @api.post("/{command_id}/kill")
    async def kill_command(command_id: str, body: KillCommand | None = None) -> dict[str, Any]:
        """Signal what the command runs (``SIGKILL`` by default: everything it started)."""
        name = body.signal if body is not None else "SIGKILL"
        command = await commands.kill(command_id, _SIGNALS[name])
        return ok({**_output(command), "signal": name})

    return api
