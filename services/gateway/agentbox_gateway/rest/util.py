"""REST door of the converter: ``POST /v1/util/convert_to_markdown`` ``{uri}`` (a sandbox path,
``file://`` or ``http(s)://``), answered with the Markdown text as ``data``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from pydantic import Field

from ..planes.convert import ConvertError, SourceNotFound
from .bodies import StrictBody
from .envelope import RestError, error_responses, ok

if TYPE_CHECKING:
    from ..planes import Planes


class ConvertRequest(StrictBody):
    uri: str = Field(min_length=1, description="a sandbox path, file:// URI or http(s):// URL")


def router(planes: Planes) -> APIRouter:
    api = APIRouter(prefix="/v1/util", tags=["util"], responses=error_responses(400, 404))

    @api.post("/convert_to_markdown")
    async def convert_to_markdown(body: ConvertRequest) -> dict[str, Any]:
        """HTML, text, JSON, CSV, XML, notebooks, zip, RSS… as Markdown (markitdown); 404 no file,
        400 a type it cannot convert or a URL it cannot fetch."""
        if not body.uri.isprintable() or not _utf8(body.uri):  # never echo what no answer can carry
            raise RestError(400, "uri must be printable UTF-8 text")
        try:
            converted = await planes.convert.convert(body.uri)
        except SourceNotFound as exc:
            raise RestError(404, str(exc)) from None
        except (ConvertError, ValueError, OSError) as exc:  # a URI that is no path (surrogates, too long)
            raise RestError(400, f"cannot convert {body.uri!r}: {exc}") from None
        return ok(converted.markdown)

    return api


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from a JSON string
        return False
    return True
