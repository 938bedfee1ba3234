"""REST door of the converter: ``POST /v1/util/convert_to_markdown`` ``{uri}`` (a sandbox path,
``file://`` or ``http(s)://``), answered with the Markdown text as ``data``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import Field

from .bodies import StrictBody, documented
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


#: Printable text with something in it (the converter refuses control characters and lone surrogates),
#: narrowed to Latin-1's printable characters.
_PRINTABLE = r"[ -~\u00a1-\u00ac\u00ae-\u00ff]"
URI = rf"^{_PRINTABLE}*[!-~\u00a1-\u00ac\u00ae-\u00ff]{_PRINTABLE}*$"


class ConvertRequest(StrictBody):
    uri: str = Field(
        min_length=1,
        description="a sandbox path, file:// URI or http(s):// URL",
        json_schema_extra=documented(URI),
    )


def router(planes: Planes) -> APIRouter:
    api = APIRouter(prefix="/v1/util", tags=["util"], responses=error_responses(400, 404))

    @api.post("/convert_to_markdown")
    async def convert_to_markdown(body: ConvertRequest) -> dict[str, Any]:
        """HTML, text, JSON, CSV, XML, notebooks, zip, RSS… as Markdown (markitdown); 404 no file,
        400 a type it cannot convert or a URL it cannot fetch (the plane's errors, answered by the
        REST door's one handler)."""
        converted = await planes.convert.convert(body.uri)
        return ok(converted.markdown)

    return api
