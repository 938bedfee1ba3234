"""The base of every JSON request body on ``/v1/*``: strict types, so a body that violates the published
schema (``1`` for a boolean, ``true`` for a number, ``"5"`` for an integer) is refused with 422 instead
of being coerced into something the caller did not send; and no ``NaN``/``Infinity`` (Python's JSON
parser reads them, JSON has no such numbers).

One exception to strictness: JSON Schema's ``integer`` is any number with no fractional part, so
``240.0`` is a valid ``integer`` by the published schema and is read as ``240`` (``240.5`` stays refused).

Strings a plane checks itself (session ids, names, absolute paths) carry the same rule as a ``pattern``
in the schema (:func:`documented`): the plane's refusal stays the one that protects, and the document
stops promising that any string will do.

And their size: :class:`BodyLimit` refuses a body over ``AIO_MAX_JSON_BODY_BYTES`` with a 413 envelope
while it is read (at once when ``Content-Length`` says so, else as the chunks arrive), so a big body is
never held in memory. Multipart routes (uploads) keep their own limits."""

from __future__ import annotations

import functools
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import get_route_path  # type: ignore[attr-defined]  # used there, not re-exported
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .envelope import RestError, failed

_HINT = "the gateway's AIO_MAX_JSON_BODY_BYTES sets the limit; send files with POST /v1/file/upload (multipart)"

#: The plane's id rules, as JSON Schema patterns (planes/shell/plane.py, planes/code/plane.py).
SHELL_SESSION_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
CODE_SESSION_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
#: An absolute path (``/...``) or one under the home (``~``, ``~/...``): planes/files/errors.py.
ABSOLUTE_PATH = r"^(/|~(/|$))[^\x00]*$"
#: An environment variable name (planes/shell/session.py).
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: A hook name (planes/hooks.py).
HOOK_NAME = r"^[A-Za-z0-9_.-]{1,64}$"
#: One folder right under the skills directory: no separator or NUL, no dot first, no padding
#: (planes/context/skills.py).
SKILL_NAME = r"^[^./\\\s\x00]([^/\\\x00]*[^/\\\s\x00])?$"


def documented(pattern: str, **schema: Any) -> dict[str, Any]:
    """``json_schema_extra`` for a string the plane checks: the rule in the document, not in pydantic."""
    return {"pattern": pattern, **schema}


@functools.cache
def _integer_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields (by name and alias) whose type takes an ``int`` but no ``float``."""
    names: set[str] = set()
    for name, field in model.model_fields.items():
        annotation = field.annotation
        union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
        kinds = set(typing.get_args(annotation)) if union else {annotation}
        if int in kinds and float not in kinds:
            names.update(n for n in (name, field.alias) if n)
    return frozenset(names)


class StrictBody(BaseModel):
    model_config = ConfigDict(strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = _integer_fields(cls)
        found = {k: int(v) for k, v in data.items() if k in fields and type(v) is float and v.is_integer()}
        return {**data, **found} if found else data


class BodyTooLarge(RestError, HTTPException):
    """The body passed the limit while a route read it: a :class:`RestError` (answered as the envelope,
    with its hint) that is an ``HTTPException`` too, so FastAPI's body parsing lets it through instead of
    turning it into 400."""

    def __init__(self, limit: int) -> None:
        message = f"Request body too large: JSON bodies on /v1/* are limited to {limit} bytes"
        RestError.__init__(self, 413, message, hint=_HINT)
        self.detail, self.headers = message, None


#: The routes that bound their bodies themselves (``AIO_MAX_UPLOAD_BYTES``, the skills' archive
#: limit, ``AIO_FS_TREE_MAX_BYTES`` for a tar tree); every other route is capped, whatever content
#: type a request claims.
MULTIPART_PATHS = frozenset({"/v1/file/upload", "/v1/skills/register", "/v2/fs/upload", "/v2/fs/tree"})


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
