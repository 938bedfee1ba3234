"""The base of every JSON request body on ``/v1/*``: strict types, so a body that violates the published
schema (``1`` for a boolean, ``true`` for a number, ``"5"`` for an integer) is refused with 422 instead
of being coerced into something the caller did not send; and no ``NaN``/``Infinity`` (Python's JSON
parser reads them, JSON has no such numbers).

And their size: :class:`BodyLimit` refuses a body over ``AIO_MAX_JSON_BODY_BYTES`` with a 413 envelope
while it is read (at once when ``Content-Length`` says so, else as the chunks arrive), so a big body is
never held in memory. Multipart routes (uploads) keep their own limits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import get_route_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .envelope import RestError, failed

_HINT = "the gateway's AIO_MAX_JSON_BODY_BYTES sets the limit; send files with POST /v1/file/upload (multipart)"


class StrictBody(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False)


class BodyTooLarge(RestError, HTTPException):
    """The body passed the limit while a route read it: a :class:`RestError` (answered as the envelope,
    with its hint) that is an ``HTTPException`` too, so FastAPI's body parsing lets it through instead of
    turning it into 400."""

    def __init__(self, limit: int) -> None:
        message = f"Request body too large: JSON bodies on /v1/* are limited to {limit} bytes"
        RestError.__init__(self, 413, message, hint=_HINT)
        self.detail, self.headers = message, None


#: The multipart routes, which bound their bodies themselves (``AIO_MAX_UPLOAD_BYTES``, the skills'
#: archive limit); every other route is capped, whatever content type a request claims.
MULTIPART_PATHS = frozenset({"/v1/file/upload", "/v1/skills/register"})


class BodyLimit:
    """ASGI middleware of the REST door: every request body but a multipart route's is at most ``limit``
    bytes."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or get_route_path(scope) in MULTIPART_PATHS:
            await self.app(scope, receive, send)
            return
        limit = self.limit
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            refusal = BodyTooLarge(limit)
            response = JSONResponse(failed(refusal.message, hint=refusal.hint), status_code=413)
            await response(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
            return message

        await self.app(scope, counted, send)
