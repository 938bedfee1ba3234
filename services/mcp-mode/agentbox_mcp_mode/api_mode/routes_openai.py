"""The OpenAI-compatible endpoint: ``GET /openai/v1/models`` (``AICODEBOX_AVAILABLE_MODELS``) and
``POST /openai/v1/chat/completions``, so any OpenAI client can hand the coding agent a chat.

A completion is one agent run (see :mod:`.openai_format` for how the request maps onto it). It runs
in the workspace named by ``x-aicodebox-workspace`` or, without that header, in an ephemeral one
(``/tmp/aicodebox/<uuid>``, mode 0700, removed afterwards); sessions are fresh unless
``x-aicodebox-continue``. The workspace lock is the one ``/run`` and MCP ``run_prompt`` use: a busy
workspace → 409 ``workspace busy, retry later``, and ``AICODEBOX_MAX_CONCURRENT_RUNS`` runs already
going → 429; no agent started.

* Plain chat, ``stream: false``: the final text; an agent that fails → 500 naming its exit code.
* Plain chat, ``stream: true``: SSE as the agent works — a role chunk, one chunk per text delta, a
  finish chunk (``finish_reason: "error"`` with ``[error: …]`` content when the agent failed), the
  usage chunk when ``stream_options.include_usage``, then ``data: [DONE]``.
* ``response_format`` ``json_object`` / ``json_schema`` (or the ``x-aicodebox-json-schema``
  header): the answer is validated and retried in fresh sessions; the content is the JSON.
  Every attempt invalid → 422 ``json_schema validation failed after N retries: …``; a failed agent →
  500. With ``stream: true`` the validated answer is replayed as one SSE stream.
* ``tools`` / ``tool_choice`` (see :mod:`.tool_passthrough`): the agent may answer with calls of the
  caller's functions → ``message.tool_calls``, ``finish_reason: "tool_calls"`` (replayed as one SSE
  stream when streaming).

A client that disconnects mid-run (streaming or not) kills the agent's process group. Errors carry
both FastAPI's ``detail`` and OpenAI's ``error`` object.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse, Response, StreamingResponse

from agentbox_common.errors import ErrorKind, PlaneError

from ..adapters.base import Adapter, AgentEvent, AgentRequest, add_usage
from ..run_service import RunService, RunSpec
from ..runner import RunOutcome
from ..workspace import WorkspaceError
from .disconnect import CleanupStreamingResponse, finish_unless_disconnected
from .openai_format import (
    DONE,
    CompletionMeta,
    RequestProblem,
    RunHeaders,
    assistant_message,
    chunk,
    completion,
    error_body,
    flatten_messages,
    parse_headers,
    resolve_model,
    schema_from_response_format,
    usage_chunk,
)
from .tool_passthrough import ToolMode, tool_mode

logger = logging.getLogger(__name__)

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ChatBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None


def run_failure(outcome: RunOutcome) -> str | None:
    """Why a run did not produce an answer (the runner's wording), or None. An adapter may report
    an error (a failed Codex turn, say) with exit code 0; that is a failure too."""
    if outcome.failure is None and outcome.reason == "error":
        return f"agent failed: {outcome.stderr.strip()[-1000:] or 'no error output'}"
    return outcome.failure


def _problem(exc: RequestProblem) -> JSONResponse:
    return JSONResponse(error_body(str(exc), exc.status, exc.code), status_code=exc.status)


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse(error_body(message, status), status_code=status)


def openai_problem(exc: PlaneError) -> RequestProblem:
    """The endpoint's one answer to a refused run, in OpenAI's terms: 409 ``workspace busy, retry
    later``, 429 at the run limit, 400 otherwise (a bad workspace named by its header)."""
    if exc.kind is ErrorKind.CONFLICT:
        return RequestProblem(409, "workspace busy, retry later", "workspace_busy")
    if exc.kind is ErrorKind.LIMIT:
        return RequestProblem(429, exc.message, "too_many_runs")
    if isinstance(exc, WorkspaceError):
        return RequestProblem(400, f"x-aicodebox-workspace: {exc.message}")
    return RequestProblem(400, exc.message)


def router(service: RunService) -> APIRouter:
    adapter, settings = service.adapter, service.settings
    models = settings.available_models
    api = APIRouter(prefix="/openai/v1")

    def model_object(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "aicodebox"}

    @api.get("/models")
    async def list_models() -> dict[str, Any]:
        return {"object": "list", "data": [model_object(name) for name in models]}

    @api.get("/models/{model:path}")
    async def get_model(model: str) -> Response:
        if model not in models:
            return _problem(RequestProblem(404, f"model {model!r} is not available", "model_not_found"))
        return JSONResponse(model_object(model))

    async def prepare(body: ChatBody, options: RunHeaders) -> tuple[AgentRequest, ToolMode | None]:
        """The agent request in its workspace (not yet held) and the tool mode, if any; RequestProblem
        if the request is unusable (the caller's schemas are checked one by one)."""
        model = resolve_model(body.model, adapter.name, models)
        prompt, system_prompt = flatten_messages(body.messages)
        schema = schema_from_response_format(body.response_format)
        if schema is None and body.response_format is None:
            schema = options.json_schema
        tools = tool_mode(body.tools, body.tool_choice)
        appended = [options.append_system_prompt, tools.instructions if tools else ""]
        spec = RunSpec(
            prompt=prompt,
            workspace=options.workspace,
            model=model,
            system_prompt=system_prompt,
            append_system_prompt="\n\n".join(part for part in appended if part),
            no_continue=not options.continue_session,
            resume=options.resume,
            thinking=body.reasoning_effort or "",
            json_schema=tools.run_schema(schema) if tools else schema,
            timeout=options.timeout,
        )
        checks = [*(tools.parameters if tools else ()), *([("json_schema", schema)] if schema is not None else [])]
        return await service.prepare(spec, checks), tools

    @api.post("/chat/completions")
    async def chat_completions(body: ChatBody, http: Request) -> Response:
        try:
            options = parse_headers(http.headers)
            request, tools = await prepare(body, options)
            held = await service.hold(request)
        except RequestProblem as exc:
            return _problem(exc)
        except PlaneError as exc:
            return _problem(openai_problem(exc))
        meta = CompletionMeta.new(body.model or adapter.name)
        include_usage = bool((body.stream_options or {}).get("include_usage"))
        if body.stream and request.json_schema is None and tools is None:
            return CleanupStreamingResponse(
                stream_plain(adapter, request, meta, include_usage, finished=held.release),
                cleanup=held.release,
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        try:
            task = asyncio.create_task(service.run(request))
            if not await finish_unless_disconnected(http, task):
                return Response(status_code=499)  # the client is gone; nobody reads this
            if task.exception() is not None:
                logger.error("chat completion failed", exc_info=task.exception())
                return _error(f"the run failed: {task.exception()}", 500)
            outcome = task.result()
        finally:
            await held.release()
        failure = run_failure(outcome)
        if failure is not None:
            invalid = outcome.exit_code == 0 and outcome.parse_error is not None
            return _error(failure, 422 if invalid else 500)
        validated = request.json_schema is not None
        calls = (
            await tools.calls(outcome.text, outcome.json if validated else None, settings.validation_timeout)
            if tools
            else None
        )
        content = json.dumps(outcome.json, ensure_ascii=False) if validated else outcome.text
        message = assistant_message(content, calls)
        headers = {"x-aicodebox-session-id": outcome.session_id} if outcome.session_id else {}
        if body.stream:
            return StreamingResponse(
                replay(meta, message, outcome.usage if include_usage else None),
                media_type="text/event-stream",
                headers={**SSE_HEADERS, **headers},
            )
        answer = completion(meta, message, outcome.usage)
        if len(outcome.attempts) > 1:
            answer["aicodebox_attempts"] = [attempt.as_dict() for attempt in outcome.attempts]
        return JSONResponse(answer, headers=headers)

    return api


async def replay(
    meta: CompletionMeta, message: dict[str, Any], usage: dict[str, Any] | None
) -> AsyncGenerator[str, None]:
    """A computed answer (text or tool calls) as one SSE stream."""
    yield chunk(meta, {"role": "assistant", "content": ""})
    if message.get("tool_calls"):
        calls = [{"index": index, **call} for index, call in enumerate(message["tool_calls"])]
        yield chunk(meta, {"tool_calls": calls})
        yield chunk(meta, {}, "tool_calls")
    else:
        yield chunk(meta, {"content": message["content"]})
        yield chunk(meta, {}, "stop")
    if usage is not None:
        yield usage_chunk(meta, usage)
    yield DONE


async def stream_plain(
    adapter: Adapter,
    request: AgentRequest,
    meta: CompletionMeta,
    include_usage: bool,
    finished: Callable[[], Awaitable[None]],
) -> AsyncGenerator[str, None]:
    """SSE chunks while the agent works; closing this generator kills the agent. ``finished`` runs
    once the agent is done, before the last chunks, so a client that has read ``[DONE]`` finds the
    workspace free again."""
    yield chunk(meta, {"role": "assistant", "content": ""})
    usage: dict[str, Any] = {}
    streamed = False
    stop: AgentEvent | None = None
    try:
        async with contextlib.aclosing(adapter.stream(request)) as events:
            async for event in events:
                if event.type == "delta" and event.text:
                    streamed = True
                    yield chunk(meta, {"content": event.text})
                elif event.type == "usage":
                    add_usage(usage, event.usage)
                elif event.type == "stop":
                    stop = event
    except Exception as exc:  # a broken custom adapter: report it in the stream, keep serving
        logger.exception("adapter %s failed while streaming", adapter.name)
        stop = AgentEvent("stop", reason="error", exit_code=1, stderr=f"{type(exc).__name__}: {exc}")
    if stop is None:
        stop = AgentEvent("stop", reason="error", exit_code=1, stderr="the adapter ended without a stop event")
    await finished()
    if not streamed and stop.text:
        yield chunk(meta, {"content": stop.text})
    failure = run_failure(RunOutcome(exit_code=stop.exit_code, stderr=stop.stderr, reason=stop.reason))
    if failure is not None:
        yield chunk(meta, {"content": f"[error: {failure}]"}, "error")
    else:
        yield chunk(meta, {}, "stop")
    if include_usage:
        yield usage_chunk(meta, usage)
    yield DONE
