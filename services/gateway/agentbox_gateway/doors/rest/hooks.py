"""REST door of the lifecycle hooks, as the agent-sandbox SDK's ``sandbox.*_hook*`` calls it:
``GET /v1/sandbox/hooks?event=``, ``POST /v1/sandbox/hooks``, ``DELETE /v1/sandbox/hooks/{name}``."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query
from pydantic import ConfigDict, Field

from ...planes.hooks import DEFAULT_TIMEOUT, EVENTS, MAX_COMMAND_BYTES, MAX_TIMEOUT, Hook
from .bodies import HOOK_NAME, StrictBody, documented
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


class HookRequest(StrictBody):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, json_schema_extra=documented(HOOK_NAME))
    command: str = Field(
        min_length=1, max_length=MAX_COMMAND_BYTES, description=f"at most {MAX_COMMAND_BYTES} bytes of UTF-8"
    )
    event: str | None = Field(None, description='only "shutdown"', json_schema_extra={"enum": [*sorted(EVENTS), None]})
    timeout: float | None = Field(None, gt=0, le=MAX_TIMEOUT, description="seconds")
    priority: int | None = Field(None, ge=-1000, le=1000, description="lower runs first; equal ones in parallel")


def router(planes: Planes) -> APIRouter:
    hooks = planes.hooks
    api = APIRouter(prefix="/v1/sandbox/hooks", tags=["sandbox"], responses=error_responses(400, 404))

    @api.get("")
    async def list_hooks(event: str | None = Query(None)) -> dict[str, Any]:
        """The hooks (of one ``event``), in the order they run."""
        return ok([asdict(hook) for hook in hooks.list(event)])

    @api.post("")
    async def register_hook(body: HookRequest) -> dict[str, Any]:
        """Add (or replace by name) a command run, with its timeout, when the sandbox stops."""
        hook = Hook(
            body.name, body.command, body.event or "shutdown", body.timeout or DEFAULT_TIMEOUT, body.priority or 0
        )
        return ok(asdict(hooks.register(hook)))

    @api.delete("/{name}")
    async def remove_hook(name: str) -> dict[str, Any]:
        return ok(asdict(hooks.remove(name)))

    return api
