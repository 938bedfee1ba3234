"""sandboxd's filesystem and runtime REST API (``filesystem.yaml`` of KEP-539.2): ``GET``, ``HEAD``,
``PUT`` and ``DELETE /v1/files/{path}``, ``GET /v1/health`` and ``GET /v1/metadata``.

Every path goes through :class:`~agentbox_common.workspace_files.WorkspaceFiles` under the root
(an escape answers 403 with the spec's body). A download streams from a file descriptor opened
first, so deleting the file meanwhile does not cut it; an upload goes to a temporary file renamed
over the target at its end, so a reader sees the old file or the new one, never a part."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentbox_common.errors import PlaneError
from agentbox_common.workspace_files import (
    Described,
    FileProblem,
    OpenedFile,
    PendingUpload,
    WorkspaceFiles,
    WorkspaceFileTooLarge,
    iter_chunks,
    under_root,
)

from .errors import rest_error

_MODE = re.compile(r"^0[0-7]{3}$")
#: Go's ``strconv.ParseBool``, which sandboxd reads ``recursive`` with.
_BOOLEANS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
#: Bytes gathered before one write to the upload's file (one worker-thread hop per MiB).
WRITE_BATCH = 1024 * 1024
#: Bytes read from a file per chunk of a download.
READ_CHUNK = 1024 * 1024


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status)


def _entry(entry: Described) -> dict[str, Any]:
    modified = datetime.datetime.fromtimestamp(int(entry.modified), datetime.UTC)
    return {
        "name": entry.name,
        "size": entry.size,
        "type": "directory" if entry.is_dir else "file",
        "modified_at": modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "mode": f"{entry.mode:04o}",
    }


async def _upload_body(request: Request) -> AsyncIterator[bytes]:
    """The bytes to write: the raw body, or the ``file`` part of a ``multipart/form-data`` body."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "multipart/form-data":
        async for chunk in request.stream():
            yield chunk
        return
    try:
        form = await request.form(max_files=1, max_fields=16)
    except (HTTPException, ValueError) as exc:  # python-multipart's, or Starlette's limits
        raise FileProblem(f"invalid multipart body: {getattr(exc, 'detail', exc)}") from None
    try:
        part = form.get("file")
        if part is None or isinstance(part, str):
            raise FileProblem('multipart body is missing the required "file" part')
        while chunk := await part.read(WRITE_BATCH):
            yield chunk
    finally:
        await form.close()


class FilesDoor:
    """The routes, over one root and the settings they answer from."""

    def __init__(self, files: WorkspaceFiles, *, max_upload_bytes: int, metadata: Callable[[], dict[str, str]]) -> None:
        self.files = files
        self.max_upload_bytes = max_upload_bytes
        self.metadata = metadata
        self.started = time.monotonic()
        #: False from the start of shutdown: ``/v1/health`` answers 503, so traffic is routed away.
        self.ready = True

    def _path(self, request: Request) -> str:
        return under_root(self.files.root, request.path_params.get("path", ""))

    async def files_route(self, request: Request) -> Response:
        if request.method == "PUT":
            return await self.put(request)
        if request.method == "DELETE":
            return await self.delete(request)
        return await self.get(request)

    async def get(self, request: Request) -> Response:
        path = self._path(request)
        described = await anyio.to_thread.run_sync(self.files.describe, path)
        if described.is_dir:
            entries = await anyio.to_thread.run_sync(self.files.scan, path)
            shown = request.path_params.get("path", "")
            body = {"path": shown if shown.startswith("/") else f"/{shown}", "entries": [_entry(e) for e in entries]}
            return JSONResponse(body)
        opened: OpenedFile = await anyio.to_thread.run_sync(self.files.open_file, path)
        headers = {
            "content-length": str(opened.size),
            "last-modified": datetime.datetime.fromtimestamp(described.modified, datetime.UTC).strftime(
                "%a, %d %b %Y %H:%M:%S GMT"
            ),
        }
        if request.method == "HEAD":
            opened.close()
            return Response(headers=headers, media_type="application/octet-stream")
        return StreamingResponse(_chunks(opened), headers=headers, media_type="application/octet-stream")

    async def put(self, request: Request) -> Response:
        raw_mode = request.query_params.get("mode")
        if raw_mode is not None and not _MODE.match(raw_mode):
            return error_response(400, "INVALID_ARGUMENT", f"mode {raw_mode!r} must match ^0[0-7]{{3}}$")
        mode = int(raw_mode, 8) if raw_mode is not None else 0o644
        path = self._path(request)
        upload: PendingUpload = await anyio.to_thread.run_sync(self.files.begin_upload, path, mode)
        try:
            batch = bytearray()
            async for chunk in _upload_body(request):
                batch += chunk
                if upload.size + len(batch) > self.max_upload_bytes:
                    raise WorkspaceFileTooLarge(
                        f"the upload is larger than {self.max_upload_bytes} bytes (AIO_MAX_UPLOAD_BYTES)"
                    )
                if len(batch) >= WRITE_BATCH:
                    await anyio.to_thread.run_sync(upload.write, bytes(batch))
                    batch.clear()
            if batch:
                await anyio.to_thread.run_sync(upload.write, bytes(batch))
            await anyio.to_thread.run_sync(upload.commit)
        finally:
            if not upload.done:
                await anyio.to_thread.run_sync(upload.abort)
        return Response(status_code=204)

    async def delete(self, request: Request) -> Response:
        raw = request.query_params.get("recursive")
        if raw is not None and raw not in _BOOLEANS:
            return error_response(400, "INVALID_ARGUMENT", f"recursive {raw!r} must be a boolean")
        recursive = raw is not None and _BOOLEANS[raw]
        path = self._path(request)
        await anyio.to_thread.run_sync(lambda: self.files.remove(path, recursive=recursive))
        return Response(status_code=204)

    async def health(self, request: Request) -> JSONResponse:
        if not self.ready:
            return error_response(503, "UNAVAILABLE", "sandboxd is shutting down")
        return JSONResponse({"status": "ok", "uptime_seconds": int(time.monotonic() - self.started)})

    async def metadata_route(self, request: Request) -> JSONResponse:
        return JSONResponse({"env": self.metadata()})


async def _chunks(opened: OpenedFile) -> AsyncIterator[bytes]:
    chunks = iter_chunks(opened, READ_CHUNK)
    try:
        while chunk := await anyio.to_thread.run_sync(next, chunks, b""):
            yield chunk
    finally:
        chunks.close()


async def _plane_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, PlaneError)
    status, body = rest_error(exc)
    return JSONResponse(body, status_code=status)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, "INVALID_ARGUMENT")
    return JSONResponse({"code": code, "message": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)


def files_app(door: FilesDoor) -> Starlette:
    """The REST app (its guard and access log are added by :mod:`.server`)."""
    methods = ["GET", "HEAD", "PUT", "DELETE"]  # one route per path, so a 405's Allow names them all
    routes = [
        # ``/v1/files`` too: a client that removes dot segments sends the root's ``/v1/files/.`` so.
        *(Route(path, door.files_route, methods=methods) for path in ("/v1/files/{path:path}", "/v1/files")),
        Route("/v1/health", door.health, methods=["GET"]),
        Route("/v1/metadata", door.metadata_route, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={PlaneError: _plane_error, HTTPException: _http_error})
