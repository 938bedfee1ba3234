"""Request ids: the caller's ``x-request-id`` when it is short and made of safe characters, else a
fresh one. The id of the request being served is in a context variable, so code far from the HTTP
layer (the upstream client, log lines) can pass it on without it being threaded through every call."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

REQUEST_ID_HEADER = "x-request-id"
#: Longest caller id kept; a longer or odd one is replaced (ids end up in logs and label-free metrics).
MAX_REQUEST_ID_LENGTH = 128
_SAFE_ID = re.compile(rf"[A-Za-z0-9._:\-]{{1,{MAX_REQUEST_ID_LENGTH}}}")

_current: ContextVar[str | None] = ContextVar("agentbox_request_id", default=None)


def accepted_request_id(presented: bytes | None) -> str:
    """The caller's id if it is safe to echo and log, else a new random one."""
    if presented is not None:
        candidate = presented.decode("latin-1")
        if _SAFE_ID.fullmatch(candidate):
            return candidate
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The id of the request this code runs for, or None outside a request."""
    return _current.get()


def set_current_request_id(request_id: str) -> object:
    return _current.set(request_id)


def reset_current_request_id(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]
