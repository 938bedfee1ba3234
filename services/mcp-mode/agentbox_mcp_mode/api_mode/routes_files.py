"""``/files``: the workspace's files over HTTP, confined exactly like the MCP file tools (the same
:mod:`~agentbox_common.workspace_files`: a leading ``/`` is relative to the root, ``..`` and
outward symlinks are refused with 400 ``path escapes workspace root: …``, nothing is touched, and
no check can be raced into an escape).

* ``GET /files`` / ``GET /files/{path}``: a directory → ``{"path", "entries": [{"name", "type",
  "size"?}]}`` (sorted, ``size`` for files); a regular file → its bytes (special files → 400). A
  file up to 1 MiB is read at once and sent with its length; a bigger one is streamed (chunked) up
  to the size it had when opened, so a file that changes or vanishes meanwhile never breaks the
  response.
* ``PUT /files/{path}``: the raw body becomes the file (parents created, written to a temporary
  file and renamed over the target, an existing file's permissions kept; nothing is left behind if
  the upload fails) → ``{"status": "ok", "path", "size"}`` with the size in bytes; a directory or
  special-file target → 400; a body over ``AICODEBOX_MAX_UPLOAD_BYTES`` → 413.
* ``DELETE /files/{path}``: files and symlinks (the link itself); a directory → 400 ``cannot delete
  directories``; missing → 404.

Refusals are :class:`~agentbox_common.workspace_files.FileProblem` errors, answered by API mode's
one error handler (:mod:`.errors`). Disk work runs in worker threads, so a big file or a slow disk
never stalls the server.
"""

from __future__ import annotations

import mimetypes
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Request
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentbox_common.workspace_files import OpenedFile, WorkspaceFiles, iter_chunks, read_at_most

#: Files up to this size are read in one go and answered with a Content-Length.
WHOLE_READ_BYTES = 1024 * 1024


def router(files: WorkspaceFiles, max_upload_bytes: int) -> APIRouter:
    api = APIRouter()

    def too_big() -> HTTPException:
        return HTTPException(413, f"upload larger than AICODEBOX_MAX_UPLOAD_BYTES ({max_upload_bytes} bytes)")

    @api.get("/files")
    @api.get("/files/{path:path}")
    async def get_files(path: str = "") -> Response:
        if await anyio.to_thread.run_sync(files.is_dir, path):
            entries = await anyio.to_thread.run_sync(files.list, path)
            listing = [{"name": e.name, "type": "dir"} if e.is_dir else _file_entry(e.name, e.size) for e in entries]
            return JSONResponse({"path": path or "/", "entries": listing})
        opened: OpenedFile = await anyio.to_thread.run_sync(files.open_file, path)
        media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
        if opened.size > WHOLE_READ_BYTES:
            return StreamingResponse(iter_chunks(opened), media_type=media_type)
        try:
            data = await anyio.to_thread.run_sync(read_at_most, opened.fd, opened.size)
        finally:
            opened.close()
        return Response(data, media_type=media_type)

    @api.put("/files/{path:path}")
    async def put_file(path: str, request: Request) -> dict[str, Any]:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_upload_bytes:
            raise too_big()
        upload = await anyio.to_thread.run_sync(files.begin_upload, path)
        try:
            async for chunk in request.stream():
                if upload.size + len(chunk) > max_upload_bytes:
                    raise too_big()
                await anyio.to_thread.run_sync(upload.write, chunk)
            await anyio.to_thread.run_sync(upload.commit)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(upload.abort)
            if isinstance(exc, ClientDisconnect):
                raise HTTPException(400, f"upload of {path} interrupted") from None
            raise
        return {"status": "ok", "path": path, "size": upload.size}

    @api.delete("/files/{path:path}")
    async def delete_file(path: str) -> dict[str, Any]:
        await anyio.to_thread.run_sync(files.delete, path)
        return {"status": "ok", "path": path}

    return api


def _file_entry(name: str, size: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "type": "file"}
    if size is not None:
        entry["size"] = size
    return entry
