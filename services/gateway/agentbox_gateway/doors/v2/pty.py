"""``/v2/pty``: AIO's terminals as resources over the shell plane's PTY sessions.

``/v2/pty/sessions`` creates (with the caller's id), lists, inspects, resizes (``PATCH``) and closes
(``DELETE``) terminals; ``exec``, ``input``, ``signal`` and ``screen`` drive one without a socket;
``/v2/pty/sessions/{id}/ws`` attaches a socket and ``/v2/pty/ws`` is a shell for one socket's life.

The socket speaks AIO's messages: ``ready`` first, then ``output`` (or ``restore_output``) frames
out and ``input``, ``resize``, ``ping`` in (a text frame that is not JSON is typed); with
``protocol=binary`` data frames are raw bytes both ways and text frames stay JSON control messages.
``durable=true`` resumes where the last durable socket stopped (``resumed: true``, a
``relay_resumed`` frame, then only the missed output); ``restore=true`` replays the last
``replay_bytes`` of the terminal's output instead. A refused handshake gets the HTTP status a
request would (400, 404, 429), in the envelope."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
from fastapi import APIRouter, WebSocket
from pydantic import Field
from starlette.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from agentbox_common.errors import PlaneError
from agentbox_common.http_status import HTTP_STATUS

from ...planes import Planes
from ...planes.shell import Attachment, AttachStart, PtySession, PtySessions
from ...planes.shell.pty import EXITED, MAX_EXEC_TIMEOUT, SIGNALS
from ..rest.bodies import ENV_NAME, SHELL_SESSION_ID, StrictBody, documented
from ..rest.envelope import RestError, error_responses, failed, ok

_NO_ID = "durable and restore need a terminal of your own: create one with POST /v2/pty/sessions {id}"


class CreateBody(StrictBody):
    id: str | None = Field(None, json_schema_extra=documented(SHELL_SESSION_ID))
    cols: int = Field(80, ge=1, le=1000)
    rows: int = Field(24, ge=1, le=1000)
    cwd: str | None = None
    env: dict[str, str] | None = Field(None, json_schema_extra={"propertyNames": {"pattern": ENV_NAME}})


class ResizeBody(StrictBody):
    cols: int = Field(ge=1, le=1000)
    rows: int = Field(ge=1, le=1000)


class ExecBody(StrictBody):
    command: str
    #: Seconds to wait for the prompt; past them the answer says ``running`` with the output so far.
    timeout: float = Field(30.0, gt=0, le=MAX_EXEC_TIMEOUT)


class InputBody(StrictBody):
    data: str
    encoding: Literal["utf-8", "base64"] = "utf-8"


class SignalBody(StrictBody):
    signal: Literal[tuple(SIGNALS) + tuple(name[3:] for name in SIGNALS)] = "SIGINT"  # type: ignore[valid-type]


def _info(session: PtySession) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "backend": "native",
        "pid": session.terminal.pid,
        "cols": session.cols,
        "rows": session.rows,
        "cwd": session.cwd,
        "status": "busy" if session.busy else "idle",
        "attached": session.attachment is not None,
        "created_at": session.created_at.isoformat(),
        "idle_seconds": round(session.idle_seconds, 3),
        "output_bytes": session.history.end,
        "retained_bytes": session.history.end - session.history.start,
    }


# -- the socket --------------------------------------------------------------------------------


def _flag(value: str | None) -> bool:
    if value is None or value.lower() in ("", "false", "0", "no"):
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    raise ValueError(f"{value!r} is not a boolean")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


async def _deny(websocket: WebSocket, status: int, message: str) -> None:
    """Refuse the handshake with ``status`` and the envelope (closed with 1008 where the server
    cannot answer a handshake with HTTP)."""
    response = JSONResponse(failed(message), status_code=status)
    try:
        await websocket.send_denial_response(response)
    except RuntimeError:
        await websocket.close(1008, message[:120])


class _Socket:
    """One attached socket: the plane's output to the client, the client's messages to the plane."""

    def __init__(self, websocket: WebSocket, session: PtySession, attachment: Attachment, binary: bool) -> None:
        self.websocket = websocket
        self.session = session
        self.attachment = attachment
        self.binary = binary

    async def send(self, message: dict[str, Any]) -> None:
        await self.websocket.send_text(json.dumps(message, ensure_ascii=False))

    async def send_data(self, kind: str, data: bytes) -> None:
        if self.binary:
            await self.websocket.send_bytes(data)
        else:
            await self.send({"type": kind, "data": _text(data)})

    async def start(self, start: AttachStart) -> None:
        await self.send(
            {
                "type": "ready",
                "session_id": self.session.session_id,
                "transport": "binary" if self.binary else "json",
                "backend": "native",
                "resumed": start.resumed,
            }
        )
        if start.resumed:
            await self.send({"type": "relay_resumed", "missed_bytes": start.missed, "dropped_bytes": start.dropped})
        if start.restored:
            snapshot = start.restored
            while snapshot and snapshot[0] & 0xC0 == 0x80:  # begin on a whole character
                snapshot = snapshot[1:]
            await self.send_data("restore_output", snapshot)

    async def to_client(self) -> None:
        while data := await self.attachment.next_output(whole_characters=not self.binary):
            await self.send_data("output", data)
            self.attachment.delivered(len(data))
        if self.attachment.ended == EXITED:
            await self.send({"type": "exit", "exit_code": self.session.terminal.exit_code})
        elif self.attachment.ended != "detached":
            await self.send({"type": "error", "data": self.attachment.ended})

    async def from_client(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            try:
                if message.get("bytes") is not None:
                    await self.session.write(message["bytes"])
                else:
                    await self._text(message.get("text") or "")
            except PlaneError as exc:
                await self.send({"type": "error", "data": exc.message})

    async def _text(self, text: str) -> None:
        control = None
        if text.startswith("{"):
            with contextlib.suppress(ValueError):
                control = json.loads(text)
        if not isinstance(control, dict) or "type" not in control:
            await self.session.write(text.encode())
            return
        kind, data = control["type"], control.get("data")
        if kind == "input" and isinstance(data, str):
            await self.session.write(data.encode())
        elif kind == "resize":
            size = data if isinstance(data, dict) else control
            self.session.resize(size.get("cols"), size.get("rows"))
        elif kind == "ping":
            await self.send({"type": "pong", "timestamp": control.get("timestamp")})
        else:
            await self.send({"type": "error", "data": f"unknown or malformed message of type {kind!r}"})

    async def run(self) -> None:
        async with anyio.create_task_group() as tasks:

            async def pump(direction: Callable[[], Awaitable[None]]) -> None:
                with contextlib.suppress(WebSocketDisconnect, RuntimeError):
                    await direction()
                tasks.cancel_scope.cancel()

            tasks.start_soon(pump, self.to_client)
            tasks.start_soon(pump, self.from_client)


async def _serve(websocket: WebSocket, session: PtySession, binary: bool, **attach: Any) -> None:
    attachment, start = session.attach(**attach)
    await websocket.accept()
    socket = _Socket(websocket, session, attachment, binary)
    try:
        await socket.start(start)
        await socket.run()
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        session.detach(attachment)
        with anyio.CancelScope(shield=True), contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close()


def router(planes: Planes) -> APIRouter:
    pty: PtySessions = planes.shell.pty
    api = APIRouter(tags=["v2 terminals"], responses=error_responses(400, 404, 409, 429, 503))

    @api.post("/v2/pty/sessions")
    async def create_session(body: CreateBody) -> dict[str, Any]:
        """A new terminal, named ``id`` (a random one when not given; 409 when taken, 429 when full)."""
        session = await pty.create(body.id, cols=body.cols, rows=body.rows, cwd=body.cwd, env=body.env)
        return ok(_info(session), "Terminal created")

    @api.get("/v2/pty/sessions")
    async def list_sessions() -> dict[str, Any]:
        sessions = [_info(s) for s in pty.sessions()]
        return ok({"sessions": sessions, "count": len(sessions), "max_sessions": pty.limits.max_sessions})

    @api.get("/v2/pty/sessions/{session_id}")
    async def inspect_session(session_id: str) -> dict[str, Any]:
        return ok(_info(pty.get(session_id)))

    @api.patch("/v2/pty/sessions/{session_id}")
    async def resize_session(session_id: str, body: ResizeBody) -> dict[str, Any]:
        session = pty.get(session_id)
        session.resize(body.cols, body.rows)
        return ok(_info(session), "Terminal resized")

    @api.delete("/v2/pty/sessions/{session_id}")
    async def delete_session(session_id: str) -> dict[str, Any]:
        """Close the terminal: its shell and everything it started are killed."""
        await pty.close(session_id)
        return ok({"session_id": session_id, "closed": True}, "Terminal closed")

    @api.post("/v2/pty/sessions/{session_id}/exec")
    async def exec_command(session_id: str, body: ExecBody) -> dict[str, Any]:
        """Type ``command`` at the terminal's prompt and wait for the prompt to come back: its
        output and exit code (``status: running`` when ``timeout`` came first; 409 when the
        terminal is running something else)."""
        session = pty.get(session_id)
        result = await session.exec(body.command, body.timeout)
        return ok(
            {
                "session_id": session_id,
                "command": result.command,
                "status": result.status,
                "output": result.output,
                "console": result.console,
                "exit_code": result.exit_code,
            }
        )

    @api.post("/v2/pty/sessions/{session_id}/input")
    async def send_input(session_id: str, body: InputBody) -> dict[str, Any]:
        """Type ``data`` (``\\n`` runs a line; ``encoding: base64`` for raw bytes)."""
        session = pty.get(session_id)
        try:
            data = base64.b64decode(body.data, validate=True) if body.encoding == "base64" else body.data.encode()
        except binascii.Error:
            raise RestError(400, "data is not valid base64") from None
        return ok({"session_id": session_id, "bytes_written": await session.write(data)})

    @api.post("/v2/pty/sessions/{session_id}/signal")
    async def send_signal(session_id: str, body: SignalBody) -> dict[str, Any]:
        """Signal the terminal's foreground job (the shell itself at its prompt), as a key would."""
        group = pty.get(session_id).signal(body.signal)
        name = body.signal if body.signal.startswith("SIG") else f"SIG{body.signal}"
        return ok({"session_id": session_id, "signal": name, "process_group": group})

    @api.get("/v2/pty/sessions/{session_id}/screen")
    async def read_screen(session_id: str) -> dict[str, Any]:
        """The screen as a terminal shows it now: one string per row, trailing spaces removed."""
        screen = await pty.get(session_id).screen()
        return ok(
            {
                "session_id": session_id,
                "cols": screen.cols,
                "rows": screen.rows,
                "cursor": {"row": screen.cursor_row, "col": screen.cursor_col},
                "lines": screen.lines,
                "text": "\n".join(screen.lines).rstrip("\n"),
            }
        )

    @api.websocket("/v2/pty/sessions/{session_id}/ws")
    async def attach(websocket: WebSocket, session_id: str) -> None:
        query = websocket.query_params
        try:
            durable, restore = _flag(query.get("durable")), _flag(query.get("restore"))
            replay = int(query["replay_bytes"]) if query.get("replay_bytes") else None
            binary = _protocol(query.get("protocol"))
            session = pty.get(session_id)
        except ValueError as exc:
            await _deny(websocket, 400, f"bad query: {exc}")
            return
        except PlaneError as exc:
            await _deny(websocket, HTTP_STATUS[exc.kind], exc.message)
            return
        await _serve(websocket, session, binary, durable=durable, restore=restore, replay_bytes=replay)

    @api.websocket("/v2/pty/ws")
    async def anonymous(websocket: WebSocket) -> None:
        """A shell that lives exactly as long as the socket."""
        query = websocket.query_params
        try:
            if _flag(query.get("durable")) or _flag(query.get("restore")):
                raise ValueError(_NO_ID)
            binary = _protocol(query.get("protocol"))
            session = await pty.create(anonymous=True)
        except ValueError as exc:
            await _deny(websocket, 400, str(exc))
            return
        except PlaneError as exc:
            await _deny(websocket, HTTP_STATUS[exc.kind], exc.message)
            return
        try:
            await _serve(websocket, session, binary, durable=False, restore=False, replay_bytes=None)
        finally:
            with anyio.CancelScope(shield=True):
                await pty.close_anonymous(session)

    return api


def _protocol(value: str | None) -> bool:
    """Whether ``protocol`` asks for binary data frames (``json``, the default, or ``binary``)."""
    if value in (None, "", "json"):
        return False
    if value == "binary":
        return True
    raise ValueError(f"protocol must be json or binary, not {value!r}")
