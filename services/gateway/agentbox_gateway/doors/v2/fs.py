"""``/v2/fs/*``: aiod's path-keyed file routes over the files plane (the same plane as
``/v1/file/*`` and the MCP tools). Reads and listings are ``GET`` with query parameters, changes are
``POST`` with JSON bodies keyed by ``path``.

Unlike ``/v1``, a failure is an HTTP status (:func:`fs_error`, the one place statuses are chosen)
with the envelope, ``success: false`` and aiod's structured error as ``data``. ``download`` and
``GET tree`` stream bytes, not the envelope. agentbox keeps its own rules where aiod's documentation
differs: the routes act as the sandbox's user with the files plane's path checks (absolute paths,
no devices or FIFOs), not as a daemon reaching the whole host, and ``?user=`` is not offered."""

from __future__ import annotations

import email.utils
import mimetypes
import re
import urllib.parse
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import Response, StreamingResponse
from pydantic import Field

from ...planes.files import Download, FileOperationError, GlobQuery, GrepQuery, ListQuery
from ...planes.files import results as records
from ..rest.bodies import ABSOLUTE_PATH, StrictBody, documented
from ..rest.envelope import RestError, error_responses, ok
from ..rest.files import GrepRequest, _UploadRoute, http_status
from ..shared.file_fields import action_fields, editor_object, error_fields

if TYPE_CHECKING:
    from ...planes import Planes
    from ...settings import GatewaySettings

T = TypeVar("T")

PATH = Query(..., description="Absolute path", json_schema_extra=documented(ABSOLUTE_PATH))


def fs_error(exc: FileOperationError) -> RestError:
    """aiod v2's answer to a file error: the status of its ``error_type`` (else of its kind), the
    structured error as ``data``."""
    return RestError(http_status(exc.error_type), exc.message, data=error_fields(exc))


async def _answer(call: Awaitable[T]) -> T:
    try:
        return await call
    except FileOperationError as exc:
        raise fs_error(exc) from None


class WriteBody(StrictBody):
    path: str = Field(description="Absolute file path", json_schema_extra=documented(ABSOLUTE_PATH))
    content: str = Field(description="The content, decoded according to encoding")
    encoding: Literal["utf-8", "base64", "raw"] = "utf-8"
    append: bool = False
    leading_newline: bool = False
    trailing_newline: bool = False


class EditBody(StrictBody):
    command: Literal["str_replace", "insert", "undo_edit", "view", "create"]
    path: str
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = None
    replace_mode: Literal["ALL", "FIRST", "LAST"] | None = None


class GrepBody(GrepRequest):
    """The same body as ``/v1/file/grep``."""


class MkdirBody(StrictBody):
    path: str
    parents: bool = False


class TransferBody(StrictBody):
    """``copy`` and ``move``."""

    path: str = Field(description="The source")
    destination: str
    overwrite: bool = False


class DeleteBody(StrictBody):
    path: str
    recursive: bool = False


#: ``replace`` is ``POST /v1/file/replace``'s; view and create have routes of their own here.
_EDIT_ELSEWHERE = {"view": "GET /v2/fs/read", "create": "POST /v2/fs/write"}


def _entry(entry: records.FileEntry, permissions: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": entry.name,
        "path": entry.path,
        "is_directory": entry.is_directory,
        "size": entry.size,
        "extension": entry.extension,
        "modified_time": entry.modified_time,
    }
    if entry.name.startswith("."):
        item["is_hidden"] = True
    if permissions:
        item["permissions"] = entry.permissions
    return item


def _changed(result: records.PathChanged) -> dict[str, Any]:
    data: dict[str, Any] = {"path": result.path}
    if result.source is not None:
        data["source"] = result.source
    return data


# -- download: HTTP's validators and ranges over the plane's pinned version --------------------

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def _byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, end)`` (end exclusive) of a single ``Range``; None for the whole file (no header, or
    several ranges, which may be answered whole); :class:`RestError` 416 when unsatisfiable."""
    found = _RANGE.fullmatch(header.strip()) if header else None
    if found is None or not any(found.groups()):
        return None
    first, last = found.groups()
    if first:
        start, end = int(first), min(int(last) + 1, size) if last else size
    else:
        start, end = max(0, size - int(last)), size
    if start >= size or start >= end:
        raise RestError(416, f"Range {header} is outside the file's {size} bytes", data={"size": size})
    return start, end


def _etag_matches(header: str, etag: str) -> bool:
    tags = [tag.strip().removeprefix("W/") for tag in header.split(",")]
    return "*" in tags or etag in tags


def _version_of(if_match: str) -> str | None:
    """The version an ``If-Match`` names (its first tag; None for ``*``)."""
    tag = if_match.split(",")[0].strip().removeprefix("W/").strip('"')
    return None if tag == "*" else tag


def _download_headers(download: Download, etag: str) -> dict[str, str]:
    quoted = urllib.parse.quote(download.name)
    return {
        "accept-ranges": "bytes",
        "etag": etag,
        "last-modified": email.utils.formatdate(download.info.st_mtime, usegmt=True),
        "content-disposition": f"attachment; filename*=utf-8''{quoted}",
    }


async def _body(download: Download, first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The first chunk (read before the answer's status was chosen), then the rest; a change under
    ``abort`` raises from ``rest``, which cuts the transfer."""
    try:
        if first:
            yield first
        async for chunk in rest:
            yield chunk
    finally:
        download.close()


def router(planes: Planes, settings: GatewaySettings) -> APIRouter:
    files, editor = planes.files, planes.editor
    api = APIRouter(prefix="/v2/fs", tags=["v2: files"], responses=error_responses(400, 403, 404, 409, 413, 507))

    @api.get("/read")
    async def read(
        path: str = PATH,
        start_line: int | None = Query(None, ge=0, description="First line, counted from 0"),
        end_line: int | None = Query(None, ge=0, description="Line to stop before (exclusive)"),
        encoding: Literal["utf-8", "base64", "raw"] = "utf-8",
    ) -> dict[str, Any]:
        """A text file (at most 16 MiB) or a range of its lines; larger files go by ``download``."""
        result = await _answer(files.read(path, encoding=encoding, start_line=start_line, end_line=end_line))
        return ok(action_fields(result))

    @api.post("/write")
    async def write(body: WriteBody) -> dict[str, Any]:
        """Write (or ``append``) text, base64-decoded bytes, or ``raw`` (one character, one byte);
        missing parent directories are created."""
        result = await _answer(files.write(**body.model_dump()))  # the body's fields are the plane's parameters
        return ok({"file": result.path, "bytes_written": result.bytes_written})

    @api.post("/edit")
    async def edit(body: EditBody) -> dict[str, Any]:
        """Anchored edit in place: ``str_replace`` (``replace_mode`` ALL/FIRST/LAST when the anchor
        is not unique), ``insert`` after ``insert_line``, ``undo_edit``."""
        if body.command in _EDIT_ELSEWHERE:
            raise RestError(
                400, f"command {body.command!r} is not part of this route: use {_EDIT_ELSEWHERE[body.command]}"
            )
        result = await editor.run(**body.model_dump())  # the body's fields are the plane's parameters
        data = editor_object(result)
        if not result.success:
            raise RestError(400, result.error or "edit failed", data=data)
        return ok(data)

    @api.get("/stat")
    async def stat(path: str = PATH, follow_symlinks: bool = True) -> dict[str, Any]:
        """One path's metadata; ``follow_symlinks=false`` describes a link itself."""
        info = await _answer(files.stat(path, follow_symlinks=follow_symlinks))
        return ok(
            {
                "path": info.path,
                "size": info.size,
                "permissions": info.permissions,
                "is_directory": info.is_directory,
                "is_symlink": info.is_symlink,
                "modified_time": info.modified_time,
            }
        )

    @api.get("/list")
    async def list_directory(
        path: str = PATH,
        recursive: bool = False,
        max_depth: int | None = Query(None, ge=1),
        show_hidden: bool = True,
        include_permissions: bool = False,
    ) -> dict[str, Any]:
        """A directory's entries (at most 10,000, then ``truncated``); links are not descended."""
        query = ListQuery(
            recursive=recursive, max_depth=max_depth, show_hidden=show_hidden, include_permissions=include_permissions
        )
        listing = await _answer(files.list(path, query))
        return ok(
            {
                "path": listing.path,
                "files": [_entry(entry, include_permissions) for entry in listing.files],
                "total_count": listing.total_count,
                "file_count": listing.file_count,
                "directory_count": listing.directory_count,
                "truncated": listing.truncated,
            }
        )

    @api.get("/search")
    async def search(
        path: str = PATH,
        pattern: str = Query(..., min_length=1, description="A glob such as **/*.py"),
        include_hidden: bool = False,
    ) -> dict[str, Any]:
        """Files under ``path`` whose path matches a glob: a flat list of paths."""
        query = GlobQuery(pattern=pattern, include_hidden=include_hidden, include_metadata=False)
        found = await _answer(files.glob(path, query))
        paths = [entry.path for entry in found.files]
        return ok(
            {
                "path": found.path,
                "pattern": pattern,
                "files": paths,
                "total_count": len(paths),
                "truncated": found.truncated,
            }
        )

    @api.post("/grep")
    async def grep(body: GrepBody) -> dict[str, Any]:
        """Search file contents: a regex, or a literal with ``fixed_strings``; 1-based line numbers."""
        result = await _answer(files.grep(body.path, GrepQuery.of(body.model_dump(), file_type="type")))
        return ok(action_fields(result))

    @api.post("/mkdir")
    async def mkdir(body: MkdirBody) -> dict[str, Any]:
        """Create a directory; ``parents`` creates the ones above and accepts an existing one."""
        result = await _answer(files.mkdir(body.path, parents=body.parents))
        return ok({"path": result.path, "created": result.created})

    @api.post("/copy")
    async def copy(body: TransferBody) -> dict[str, Any]:
        """Copy a file or tree; an existing destination is ``already_exists`` unless ``overwrite``."""
        return ok(_changed(await _answer(files.copy(body.path, body.destination, overwrite=body.overwrite))))

    @api.post("/move")
    async def move(body: TransferBody) -> dict[str, Any]:
        """Move or rename; the same body as ``copy``."""
        return ok(_changed(await _answer(files.move(body.path, body.destination, overwrite=body.overwrite))))

    @api.post("/delete")
    async def delete(body: DeleteBody) -> dict[str, Any]:
        """Remove a path; ``recursive`` for a non-empty directory. A link is removed, not its target."""
        return ok(_changed(await _answer(files.delete(body.path, recursive=body.recursive))))

    async def upload(
        file: UploadFile = File(...),  # noqa: B008
        path: str | None = Form(None),
    ) -> dict[str, Any]:
        """One file as ``multipart/form-data``, spooled to disk and renamed over ``path``."""
        try:
            saved = await _answer(files.save_upload(path, file.filename, file.file))
        finally:
            await file.close()
        return ok({"file_path": saved.file_path, "file_size": saved.file_size, "success": True})

    class UploadRoute(_UploadRoute):
        limit = settings.max_upload_bytes

    api.add_api_route("/upload", upload, methods=["POST"], route_class_override=UploadRoute)

    async def download(
        request: Request,
        path: str = PATH,
        change_policy: Literal["follow", "abort"] = Query(
            "follow", description="abort: pin the file at open; 409 if it changed, the transfer cut if it changes"
        ),
    ) -> Response:
        """Stream one file: ``Range`` (206), ``ETag``/``Last-Modified``, ``If-None-Match``,
        ``If-Range``, and ``If-Match`` (409 with ``change_policy=abort``, else 412)."""
        headers = request.headers
        expected = headers.get("if-match")
        pinned = _version_of(expected) if change_policy == "abort" and expected else None
        handle = await _answer(files.open_download(path, change_policy=change_policy, expected_version=pinned))
        etag = f'"{handle.version}"'
        try:
            if expected is not None and not _etag_matches(expected, etag):
                raise RestError(412, "Failed to download file: the file is not the version If-Match names")
            answer = _download_headers(handle, etag)
            if (none_match := headers.get("if-none-match")) is not None and _etag_matches(none_match, etag):
                handle.close()
                return Response(status_code=304, headers=answer)
            if_range = headers.get("if-range")
            span = _byte_range(headers.get("range"), handle.size) if if_range in (None, etag) else None
            start, end = span or (0, handle.size)
            status = 206 if span else 200
            if span:
                answer["content-range"] = f"bytes {start}-{end - 1}/{handle.size}"
            answer["content-length"] = str(end - start)
            media = mimetypes.guess_type(handle.name)[0] or "application/octet-stream"
            if request.method == "HEAD":
                handle.close()
                return Response(status_code=status, headers=answer, media_type=media)
            chunks = handle.chunks(start, end)
            first = await _answer(anext(chunks, b""))  # a change before the first byte is still a 409
        except BaseException:
            handle.close()
            raise
        return StreamingResponse(_body(handle, first, chunks), status_code=status, headers=answer, media_type=media)

    # GET and HEAD apart: one route with both would give the two operations one OpenAPI operationId.
    for method in ("GET", "HEAD"):
        api.add_api_route(
            "/download",
            download,
            methods=[method],
            response_class=StreamingResponse,
            responses={
                200: {"content": {"application/octet-stream": {}}},
                206: {"description": "The requested range"},
                304: {"description": "Not modified (If-None-Match)"},
                412: {"description": "If-Match names another version"},
                416: {"description": "The range is outside the file"},
            },
        )

    @api.get("/tree", response_class=StreamingResponse, responses={200: {"content": {"application/x-tar": {}}}})
    async def export_tree(path: str = PATH) -> StreamingResponse:
        """A whole directory as one tar stream (links as links, no devices or FIFOs)."""
        tree = await _answer(files.export_tree(path))

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in tree.chunks():
                    yield chunk
            finally:
                tree.close()

        disposition = f"attachment; filename*=utf-8''{urllib.parse.quote(tree.name)}.tar"
        return StreamingResponse(body(), media_type="application/x-tar", headers={"content-disposition": disposition})

    @api.put("/tree", openapi_extra={"requestBody": {"content": {"application/x-tar": {}}, "required": True}})
    async def import_tree(request: Request, path: str = PATH) -> dict[str, Any]:
        """Extract a tar body (plain or compressed) into ``path``: ``mode`` ``rename`` when it did not
        exist, ``merge`` when it did. ``..``, absolute names, links out and devices are refused."""
        length = request.headers.get("content-length", "")
        size = int(length) if length.isdigit() else None
        result = await _answer(files.import_tree(path, request.stream(), size=size))
        return ok(
            {"path": result.path, "mode": result.mode, "entries": result.entries, "bytes_written": result.bytes_written}
        )

    return api
