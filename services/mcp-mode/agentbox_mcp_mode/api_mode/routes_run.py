"""``POST /run``, ``GET /run/result``, ``DELETE /run/{runId}`` and ``GET /status``.

``/run`` takes aicodebox's fields in camelCase or snake_case. Everything that can refuse a run is
checked before anything is created or started: 422 for the body (empty prompt, bad types, a model
outside ``AICODEBOX_AVAILABLE_MODELS``, an invalid ``jsonSchema``, a value the adapter cannot
run), 400 for a bad workspace, 409 ``workspace <path> is busy with another run`` when any surface
(another ``/run``, the OpenAI endpoint, MCP ``run_prompt``) holds the workspace, 429 when the
process already runs ``AICODEBOX_MAX_CONCURRENT_RUNS`` agents.

Checking and locking are the run service's (:mod:`~agentbox_mcp_mode.run_service`); its refusals
are answered by API mode's one error handler (:mod:`.errors`).

A sync run answers when the agent is done (200 whatever its exit code; ``stderr`` is added when it
is not 0) and is killed if its client disconnects first. ``async`` (or ``fireAndForget``, which
also drops the result) answers at once with the ``runId``; the result is polled from
``/run/result`` and handed out once. Sessions continue by default (``noContinue=false``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..run_service import RunService, RunSpec
from ..runner import RunOutcome
from .disconnect import finish_unless_disconnected
from .runs import RunRegistry


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


def router(service: RunService, registry: RunRegistry) -> APIRouter:
    api = APIRouter()

    @api.post("/run")
    async def start_run(body: RunBody, http: Request) -> dict[str, Any]:
        spec = RunSpec(
            prompt=body.prompt,
            workspace=body.workspace or "",
            model=body.model or "",
            system_prompt=body.system_prompt or "",
            append_system_prompt=body.append_system_prompt or "",
            no_continue=body.no_continue,
            resume=body.resume or "",
            thinking=body.thinking or "",
            json_schema=body.json_schema,
            timeout=body.timeout_seconds,
        )
        request = await service.prepare(spec)

        async def work() -> dict[str, Any]:
            return run_answer(await service.run(request), request.json_schema is not None)

        background = body.run_async or body.fire_and_forget
        record = registry.start(request.cwd, work, keep_result=background and not body.fire_and_forget)
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
