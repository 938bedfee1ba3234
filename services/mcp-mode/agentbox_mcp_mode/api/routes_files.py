"""``/files``: the workspace's files over HTTP, confined exactly like the MCP file tools (the same
resolver: a leading ``/`` is relative to the root, ``..`` and outward symlinks are refused after
resolution with 400 ``path escapes workspace root: …``; nothing is touched before the check).

* ``GET /files`` / ``GET /files/{path}``: a directory → ``{"path", "entries": [{"name", "type",
  "size"?}]}`` (sorted, ``size`` for files); a file → its bytes, streamed.
* ``PUT /files/{path}``: the raw body becomes the file (parents created, replaced atomically, an
  existing file's permissions kept) → ``{"status": "ok", "path", "size"}`` with the size in bytes;
  a directory target → 400.
* ``DELETE /files/{path}``: files only (a directory → 400 ``cannot delete directories``; missing →
  404).

Disk work runs in worker threads, so a big file or a slow disk never stalls the server.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Request
from starlette.requests import ClientDisconnect
from starlette.responses import FileResponse, JSONResponse, Response

from ..workspace import Workspace, WorkspaceError


def _entry(path: Path) -> dict[str, Any]:
    if path.is_dir():
        return {"name": path.name, "type": "dir"}
    entry: dict[str, Any] = {"name": path.name, "type": "file"}
    try:
        entry["size"] = path.stat().st_size
    except OSError:  # a dangling symlink
        pass
    return entry


def _replace(partial: Path, target: Path) -> None:
    """Move the upload into place, keeping an existing file's permission bits."""
    if target.exists():
        shutil.copymode(target, partial)
    os.replace(partial, target)


def router(workspace: Workspace) -> APIRouter:
    api = APIRouter()

    async def resolve(path: str) -> Path:
        try:
            return await anyio.to_thread.run_sync(workspace.resolve_file, path)
        except WorkspaceError as exc:
            raise HTTPException(400, str(exc)) from None

    @api.get("/files")
    @api.get("/files/{path:path}")
    async def get_files(path: str = "") -> Response:
        target = await resolve(path)

        def listing() -> dict[str, Any] | None:
            if not target.is_dir():
                return None
            entries = sorted((_entry(child) for child in target.iterdir()), key=lambda e: e["name"])
            return {"path": path or "/", "entries": entries}

        try:
            found = await anyio.to_thread.run_sync(listing)
        except PermissionError:
            raise HTTPException(403, f"permission denied: {path}") from None
        if found is not None:
            return JSONResponse(found)
        if not await anyio.to_thread.run_sync(target.is_file):
            raise HTTPException(404, f"not found: {path}")
        return FileResponse(target)

    @api.put("/files/{path:path}")
    async def put_file(path: str, request: Request) -> dict[str, Any]:
        target = await resolve(path)
        if await anyio.to_thread.run_sync(target.is_dir):
            raise HTTPException(400, f"is a directory: {path}")
        try:
            await anyio.to_thread.run_sync(lambda: target.parent.mkdir(parents=True, exist_ok=True))
        except (FileExistsError, NotADirectoryError):
            raise HTTPException(400, f"a parent of {path} is a file") from None
        # Written beside the target and renamed over it, so an interrupted upload changes nothing.
        partial = target.with_name(f".{target.name}.upload-{uuid.uuid4().hex[:12]}")
        size = 0
        try:
            async with await anyio.open_file(partial, "xb") as handle:
                async for chunk in request.stream():
                    await handle.write(chunk)
                    size += len(chunk)
            await anyio.to_thread.run_sync(_replace, partial, target)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: partial.unlink(missing_ok=True))
            if isinstance(exc, ClientDisconnect):
                raise HTTPException(400, f"upload of {path} interrupted") from None
            raise
        return {"status": "ok", "path": path, "size": size}

    @api.delete("/files/{path:path}")
    async def delete_file(path: str) -> dict[str, Any]:
        target = await resolve(path)
        if await anyio.to_thread.run_sync(target.is_dir):
            raise HTTPException(400, f"cannot delete directories: {path}")
        try:
            await anyio.to_thread.run_sync(target.unlink)
        except FileNotFoundError:
            raise HTTPException(404, f"not found: {path}") from None
        return {"status": "ok", "path": path}

    return api
