"""REST door of the file plane (``/v1/file/*``), as the agent-sandbox SDK calls it.

A failed operation is HTTP 200 with ``success: false`` and the structured error in ``data`` (AIO v1).
Because the SDK parses ``data`` into the route's model even then, a failure's ``data`` also carries
that model's required fields (``file``, ``content: ""`` ...), so SDK users get the error instead of
a parsing exception. Download is the exception: it streams bytes, so it fails with an HTTP status.
The fields are aiod's, written from the plane's records by the MCP tool's functions
(:mod:`..mcp.tools.files`, :mod:`..mcp.tools.editor`), so both doors answer with the same objects.
An upload larger than ``AIO_MAX_UPLOAD_BYTES`` is refused with 413 as soon as that many bytes came in
(at once when ``Content-Length`` says so), before anything is stored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, File, Form, Query, Request, Response, UploadFile
from fastapi.responses import FileResponse
from fastapi.routing import APIRoute
from pydantic import Field
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.types import Message

from agentbox_common.errors import TooLarge
from agentbox_common.http_status import HTTP_STATUS

from ...planes.files import FileErrorType, FileOperationError, FileResult, GlobQuery, GrepQuery, ListQuery, SavedUpload
from ...settings import GatewaySettings
from ..shared.file_fields import action_fields, editor_object, error_fields
from .bodies import ABSOLUTE_PATH, StrictBody, documented
from .envelope import RestError, error_responses, failed, ok

if TYPE_CHECKING:
    from ...planes import Planes

#: Where aiod's v2 status for an error type is finer than its kind's (422 and 507 have no kind).
#: Download, where a status code is the only channel, answers by type; its body carries the error.
FINER_STATUS = {FileErrorType.DECODE_ERROR: 422, FileErrorType.NO_SPACE_LEFT: 507}


def http_status(error_type: FileErrorType) -> int:
    """aiod's v2 status for ``error_type``: its kind's (403 for ``permission_denied``), or finer."""
    return FINER_STATUS.get(error_type, HTTP_STATUS[error_type.kind])


class ReadRequest(StrictBody):
    file: str = Field(description="Absolute file path")
    start_line: int | None = Field(None, description="Start line (0-based)")
    end_line: int | None = Field(None, description="End line (not inclusive)")
    encoding: str | None = Field("utf-8", description="utf-8, base64 or raw")
    sudo: bool | None = Field(None, description="Accepted for compatibility; the gateway's permissions apply")


class WriteRequest(StrictBody):
    file: str = Field(description="Absolute file path")
    content: str = Field(description="Content to write (text, or base64 for binary)")
    encoding: str | None = Field("utf-8", description="utf-8 for text, base64 for binary data")
    append: bool = False
    leading_newline: bool = False
    trailing_newline: bool = False
    sudo: bool | None = None


class ReplaceRequest(StrictBody):
    file: str
    old_str: str
    new_str: str
    sudo: bool | None = None


class SearchRequest(StrictBody):
    file: str
    regex: str
    sudo: bool | None = None


class FindRequest(StrictBody):
    path: str
    glob: str


class GrepRequest(StrictBody):
    path: str
    pattern: str
    include: list[str] | None = None
    exclude: list[str] | None = None
    case_insensitive: bool = False
    fixed_strings: bool = False
    context_before: int = Field(0, ge=0)
    context_after: int = Field(0, ge=0)
    max_results: int | None = Field(None, ge=1)
    max_file_size: str | None = None
    multiline: bool = False
    offset: int = Field(0, ge=0)
    type: str | None = None
    recursive: bool = True


class GlobRequest(StrictBody):
    path: str
    pattern: str
    include: list[str] | None = None
    exclude: list[str] | None = None
    include_hidden: bool = False
    files_only: bool = True
    include_metadata: bool = True
    max_results: int | None = Field(None, ge=1)
    sort_by: str | None = "path"
    sort_desc: bool = False


class ListRequest(StrictBody):
    path: str
    recursive: bool = False
    show_hidden: bool = False
    file_types: list[str] | None = None
    max_depth: int | None = Field(None, ge=1)
    include_size: bool = True
    include_permissions: bool = False
    sort_by: str | None = "name"
    sort_desc: bool = False


class EditorRequest(StrictBody):
    command: Literal["view", "create", "str_replace", "insert", "undo_edit"]
    path: str
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: int | None = None
    view_range: list[int] | None = None
    replace_mode: Literal["ALL", "FIRST", "LAST"] | None = None


class _TooLarge(HTTPException):
    """The body passed the limit (an ``HTTPException``, so FastAPI's body parsing lets it through)."""

    def __init__(self) -> None:
        super().__init__(413)


class _UploadRoute(APIRoute):
    """Counts the body as it is received and stops at ``AIO_MAX_UPLOAD_BYTES`` with a 413 envelope
    (FastAPI's own ``max_body_size`` answers plain text when ``Content-Length`` is over)."""

    limit = 0

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        limit = self.limit

        async def limited(request: Request) -> Response:
            length = request.headers.get("content-length", "")
            received = 0

            async def receive() -> Message:
                nonlocal received
                message = await request.receive()
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
                return message

            try:
                if length.isdigit() and int(length) > limit:
                    raise _TooLarge
                return await handler(Request(request.scope, receive))
            except _TooLarge:
                raise TooLarge(
                    f"Failed to upload file: the upload is larger than the limit of {limit} bytes",
                    hint="the gateway's AIO_MAX_UPLOAD_BYTES sets the limit",
                ) from None

        return limited


def _file_data(result: FileResult) -> dict[str, Any]:
    """A single-file action's result as the SDK models it: ``path`` is called ``file``."""
    data = action_fields(result)
    return {"file": data.pop("path"), **data}


def upload_data(saved: SavedUpload) -> dict[str, Any]:
    """An upload's ``data`` (the SDK's ``FileUploadResult``)."""
    return {"file_path": saved.file_path, "file_size": saved.file_size, "success": True}


async def _respond(call: Awaitable[FileResult], single_file: bool, required: dict[str, Any]) -> dict[str, Any]:
    """The SDK's contract: a failure is HTTP 200 with ``success: false`` and the structured error."""
    try:
        result = await call
    except FileOperationError as exc:
        return failed(exc.message, {**error_fields(exc), **required})
    return ok(_file_data(result) if single_file else action_fields(result))


def router(planes: Planes, settings: GatewaySettings) -> APIRouter:
    files, editor = planes.files, planes.editor
    api = APIRouter(prefix="/v1/file", tags=["file"], responses=error_responses(400, 403, 404, 409, 413, 507))

    @api.post("/read")
    async def read_file(body: ReadRequest) -> dict[str, Any]:
        """Read a file (``data``: ``{content, file}``); lines are 0-based, end exclusive."""
        call = files.read(body.file, encoding=body.encoding, start_line=body.start_line, end_line=body.end_line)
        return await _respond(call, True, {"file": body.file, "content": ""})

    @api.post("/write")
    async def write_file(body: WriteRequest) -> dict[str, Any]:
        """Write text, or binary data sent as base64 (``encoding: base64``)."""
        call = files.write(
            body.file,
            body.content,
            encoding=body.encoding,
            append=body.append,
            leading_newline=body.leading_newline,
            trailing_newline=body.trailing_newline,
        )
        return await _respond(call, True, {"file": body.file})

    @api.post("/replace")
    async def replace_in_file(body: ReplaceRequest) -> dict[str, Any]:
        """Replace every occurrence of ``old_str`` with ``new_str``."""
        return await _respond(files.replace(body.file, body.old_str, body.new_str), True, {"file": body.file})

    @api.post("/search")
    async def search_in_file(body: SearchRequest) -> dict[str, Any]:
        """Lines of one file matching ``regex`` (1-based ``line_numbers``)."""
        return await _respond(files.search(body.file, body.regex), True, {"file": body.file})

    @api.post("/find")
    async def find_files(body: FindRequest) -> dict[str, Any]:
        """Files under ``path`` whose name matches ``glob``."""
        return await _respond(files.find(body.path, body.glob), False, {"path": body.path})

    @api.post("/grep")
    async def grep_files(body: GrepRequest) -> dict[str, Any]:
        """ripgrep-style search across files (at most 500 matches, files over 1 MiB skipped)."""
        call = files.grep(body.path, GrepQuery.of(body.model_dump(), file_type="type"))
        return await _respond(call, False, {"path": body.path, "pattern": body.pattern})

    @api.post("/glob")
    async def glob_files(body: GlobRequest) -> dict[str, Any]:
        """Paths matching a glob such as ``**/*.py`` (at most 5000)."""
        call = files.glob(body.path, GlobQuery.of(body.model_dump()))
        return await _respond(call, False, {"path": body.path, "pattern": body.pattern})

    @api.post("/list")
    async def list_path(body: ListRequest) -> dict[str, Any]:
        """Directory entries (``FileInfo``) with counts (at most 10000)."""
        call = files.list(body.path, ListQuery.of(body.model_dump()))
        return await _respond(call, False, {"path": body.path})

    @api.post("/str_replace_editor")
    async def str_replace_editor(body: EditorRequest) -> dict[str, Any]:
        """Anthropic's text-editor commands: view, create, str_replace, insert, undo_edit."""
        result = await editor.run(**body.model_dump())  # the body's fields are the plane's parameters
        data = editor_object(result)
        return ok(data) if result.success else failed(result.error or "editor command failed", data)

    async def upload_file(
        file: UploadFile = File(...),  # noqa: B008
        path: str | None = Form(None),
    ) -> dict[str, Any]:
        """Store a multipart upload at ``path`` (a directory, or none, keeps the file's own name)."""
        try:
            saved = await files.save_upload(path, file.filename, file.file)
        except FileOperationError as exc:
            return failed(exc.message, {**error_fields(exc), "file_path": path or "", "file_size": 0, "success": False})
        finally:
            await file.close()
        return ok(upload_data(saved))

    class UploadRoute(_UploadRoute):
        limit = settings.max_upload_bytes

    api.add_api_route(
        "/upload",
        upload_file,
        methods=["POST"],
        route_class_override=UploadRoute,
        responses={413: {"description": "The upload is larger than AIO_MAX_UPLOAD_BYTES"}},
    )

    @api.get(
        "/download",
        response_class=FileResponse,
        responses={200: {"content": {"application/octet-stream": {}}}},
    )
    async def download_file(
        path: str = Query(..., description="Absolute file path", json_schema_extra=documented(ABSOLUTE_PATH)),
    ) -> FileResponse:
        """Stream a file (``Range`` requests answer 206, ``ETag``/``Last-Modified`` set)."""
        try:
            target = await files.download_target(path)
        except FileOperationError as exc:
            raise RestError(http_status(exc.error_type), exc.message, data=error_fields(exc)) from None
        return FileResponse(
            target.path, stat_result=target.info, filename=target.name, background=BackgroundTask(target.close)
        )

    return api
