"""``POST /run``, ``GET /run/result``, ``DELETE /run/{runId}`` and ``GET /status``.

``/run`` takes aicodebox's fields in camelCase or snake_case. Everything that can refuse a run is
checked before anything is created or started: 422 for the body (empty prompt, bad types, a model
outside ``AICODEBOX_AVAILABLE_MODELS``, an invalid ``jsonSchema``, a value the adapter cannot
run), 400 for a bad workspace, 409 ``workspace <path> is busy with another run`` when any surface
(another ``/run``, the OpenAI endpoint, MCP ``run_prompt``) holds the workspace, 429 when the
process already runs ``AICODEBOX_MAX_CONCURRENT_RUNS`` agents.

A sync run answers when the agent is done (200 whatever its exit code; ``stderr`` is added when it
is not 0) and is killed if its client disconnects first. ``async`` (or ``fireAndForget``, which
also drops the result) answers at once with the ``runId``; the result is polled from
``/run/result`` and handed out once. Sessions continue by default (``noContinue=false``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import anyio
from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..adapters.base import Adapter, AgentRequest, AgentRequestError
from ..locks import TooManyRuns, WorkspaceBusy
from ..runner import RunOutcome, check_request, run_with_json_retry
from ..workspace import Workspace, WorkspaceError
from .disconnect import finish_unless_disconnected
from .runs import RunRegistry
from .settings import ApiModeSettings

logger = logging.getLogger(__name__)


class RunBody(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)

    prompt: str = Field(min_length=1)
    workspace: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    json_schema: dict[str, Any] | None = None
    #: False (the default) continues the workspace's latest session.
    no_continue: bool = False
    resume: str | None = None
    thinking: str | None = None
    timeout_seconds: float | None = Field(default=None, gt=0)
    run_async: bool = Field(default=False, alias="async")
    #: Implies async; the result is not kept.
    fire_and_forget: bool = False


def run_answer(outcome: RunOutcome, with_schema: bool) -> dict[str, Any]:
    """The answer fields of a finished run, named as aicodebox names them."""
    answer: dict[str, Any] = {
        "exitCode": outcome.exit_code,
        "text": outcome.text,
        "sessionId": outcome.session_id,
        "usage": outcome.usage,
    }
    if outcome.exit_code != 0:
        answer["stderr"] = outcome.stderr
    if with_schema:
        answer["attempts"] = [
            {"index": a.index, "usage": a.usage, "exitCode": a.exit_code, "parseError": a.parse_error}
            for a in outcome.attempts
        ]
        if outcome.exit_code == 0 and outcome.parse_error is None:
            answer["json"] = outcome.json
        elif outcome.parse_error is not None:
            answer["parseError"] = outcome.parse_error
            answer["jsonRetries"] = outcome.retries
    return answer


def router(settings: ApiModeSettings, adapter: Adapter, registry: RunRegistry) -> APIRouter:
    workspace = Workspace(settings.mcp.workspace)
    api = APIRouter()

    @api.post("/run")
    async def start_run(body: RunBody, http: Request) -> dict[str, Any]:
        request = AgentRequest(
            prompt=body.prompt,
            cwd=workspace.root,
            model=body.model or "",
            system_prompt=body.system_prompt or "",
            append_system_prompt=body.append_system_prompt or "",
            no_continue=body.no_continue,
            resume=body.resume or "",
            thinking=body.thinking or "",
            json_schema=body.json_schema,
            timeout=body.timeout_seconds or settings.mcp.run_timeout,
        )
        try:
            await check_request(settings.mcp, adapter, request)
        except (ValueError, AgentRequestError) as exc:
            raise HTTPException(422, str(exc)) from None
        try:
            cwd = await anyio.to_thread.run_sync(workspace.run_directory, body.workspace or "")
        except WorkspaceError as exc:
            raise HTTPException(400, str(exc)) from None
        request = dataclasses.replace(request, cwd=cwd)
        retries, validation_timeout = settings.mcp.json_retries, settings.mcp.validation_timeout

        async def work() -> dict[str, Any]:
            started = time.monotonic()
            outcome = await run_with_json_retry(adapter, request, retries, validation_timeout)
            logger.info(
                "/run in %s: exit %s, %d attempt(s), %.1fs",
                cwd,
                outcome.exit_code,
                len(outcome.attempts),
                time.monotonic() - started,
            )
            return run_answer(outcome, request.json_schema is not None)

        background = body.run_async or body.fire_and_forget
        try:
            record = registry.start(cwd, work, keep_result=background and not body.fire_and_forget)
        except WorkspaceBusy as exc:
            raise HTTPException(409, str(exc)) from None
        except TooManyRuns as exc:
            raise HTTPException(429, str(exc)) from None
        if background:
            return {**record.summary(), "fireAndForget": body.fire_and_forget}
        assert record.task is not None
        await finish_unless_disconnected(http, record.task)
        if record.status == "failed":
            raise HTTPException(500, record.error)
        return record.public()

    @api.get("/run/result")
    async def run_result(
        run_id: str | None = Query(default=None, alias="runId"),
        run_id_snake: str | None = Query(default=None, alias="run_id"),
    ) -> dict[str, Any]:
        wanted = run_id or run_id_snake
        if not wanted:
            raise HTTPException(422, "runId is required")
        record = registry.collect(wanted)
        if record is None:
            raise HTTPException(404, "run not found")
        return record.public()

    @api.delete("/run/{run_id}")
    async def cancel_run(run_id: str) -> dict[str, Any]:
        record = await registry.cancel(run_id)
        if record is None:
            raise HTTPException(404, "run not found")
        return {"runId": record.run_id, "status": record.status}

    @api.get("/status")
    async def status() -> dict[str, Any]:
        return {
            "busyWorkspaces": registry.locks.busy(),
            "runs": [record.summary() for record in registry.runs()],
        }

    return api
