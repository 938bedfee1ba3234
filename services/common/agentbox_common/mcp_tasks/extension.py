"""The tasks extension's wire (``io.modelcontextprotocol/tasks``, SEP-2663, for 2026-07-28 clients):
a ``tools/call`` from a client that declared the extension on that request, still running after
:data:`SYNC_WINDOW`, is answered with a flat ``CreateTaskResult``; ``tasks/get`` inlines the result
(or error, or ``inputRequests``), ``tasks/update`` carries ``inputResponses``, ``tasks/cancel`` is an
empty ack. ``_meta["dev.agentbox/idempotency-key"]`` on a call returns the task already made under that
key, ``_meta["dev.agentbox/output"]`` on ``tasks/get`` the output printed so far."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from mcp import types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.jsonrpc import HEADER_MISMATCH

from .store import Status, Task, TaskPolicy, TaskStore, base_fields, current_task

EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
IDEMPOTENCY_KEY = "dev.agentbox/idempotency-key"
OUTPUT = "dev.agentbox/output"
#: The spec's "Missing required client capability".
MISSING_CAPABILITY = -32021
#: A call still running after this long becomes a task; one done by then is answered as usual.
SYNC_WINDOW = 0.2
POLL_INTERVAL_MS = 500
MAX_KEY_LENGTH = 200
#: The key of the one input request a tool's question makes.
INPUT_KEY = "input"


def task_fields(task: Task) -> dict[str, Any]:
    """The spec's ``Task`` shape."""
    return {**base_fields(task), "ttlMs": TaskStore.ttl_ms(task), "pollIntervalMs": POLL_INTERVAL_MS}


def detailed_task(task: Task) -> dict[str, Any]:
    """``tasks/get``'s ``DetailedTask``: the task, with its result, error or input requests inlined."""
    answer = task_fields(task)
    if task.status == Status.COMPLETED and task.result is not None:
        answer["result"] = task.result
    elif task.status == Status.FAILED and task.error is not None:
        answer["error"] = task.error
    elif task.status == Status.INPUT_REQUIRED and task.input_requests is not None:
        answer["inputRequests"] = task.input_requests
    answer["_meta"] = output_meta(task)
    return answer


def output_meta(task: Task) -> dict[str, Any]:
    """``tasks/get``'s ``_meta`` on both wires: the output printed so far (its newest part) and how
    much was printed in all."""
    return {OUTPUT: {"text": task.output, "total": task.output_total}}


def declares_tasks(params: Mapping[str, Any] | None) -> bool:
    """Whether a request's ``_meta`` declares the tasks extension among its client capabilities."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def elicits(params: Mapping[str, Any] | None) -> bool:
    """Whether the request's client declares it answers elicitation (form mode)."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    return isinstance(capabilities, Mapping) and isinstance(capabilities.get("elicitation"), Mapping)


def task_input() -> Callable[[str], Awaitable[str | None]] | None:
    """How the running tool asks its client for a line of text (``input_required``, an elicitation
    form of one string field), when it runs as a task of a client that answers elicitation."""
    task = current_task()
    if task is None or not task.interactive:
        return None

    async def ask(prompt: str) -> str | None:
        request = {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": prompt,
                "requestedSchema": {
                    "type": "object",
                    "properties": {INPUT_KEY: {"type": "string", "title": "Input", "description": "The line to type"}},
                    "required": [INPUT_KEY],
                },
            },
        }
        answers = await task.ask({INPUT_KEY: request}, message=f"waiting for input: {prompt}")
        answer = answers.get(INPUT_KEY)
        if not isinstance(answer, Mapping) or answer.get("action") != "accept":
            return None
        content = answer.get("content")
        value = content.get(INPUT_KEY) if isinstance(content, Mapping) else None
        return value if isinstance(value, str) else None

    return ask


def require_extension(params: Mapping[str, Any] | None) -> None:
    if not declares_tasks(params):
        raise MCPError(
            MISSING_CAPABILITY,
            "Missing required client capability",
            {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
        )


def idempotency_key(params: Mapping[str, Any] | None) -> str | None:
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    key = meta.get(IDEMPOTENCY_KEY) if isinstance(meta, Mapping) else None
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH:
        raise MCPError(types.INVALID_PARAMS, f"{IDEMPOTENCY_KEY} must be a string of 1 to {MAX_KEY_LENGTH} characters")
    return key


async def call_as_task(
    policy: TaskPolicy,
    ctx: ServerRequestContext[Any, Any],
    name: str,
    arguments: Mapping[str, Any] | None,
    call: Callable[[], Awaitable[types.CallToolResult]],
) -> types.CallToolResult | dict[str, Any]:
    """``call()`` as a task when the policy and the request allow it: the plain result if it is done
    within :data:`SYNC_WINDOW`, else the ``CreateTaskResult``."""
    if not policy.eligible(name) or not declares_tasks(ctx.params):
        return await call()
    task = policy.store.start(name, arguments, idempotency_key(ctx.params), call, interactive=elicits(ctx.params))
    if task is None:
        return await call()
    with anyio.move_on_after(SYNC_WINDOW):
        await task.done.wait()
    if task.status == Status.COMPLETED and task.result is not None:
        return types.CallToolResult.model_validate(task.result)
    if task.status == Status.FAILED and task.error is not None:
        raise MCPError(task.error.get("code", types.INTERNAL_ERROR), task.error.get("message", ""))
    return {"resultType": "task", **task_fields(task)}


def check_request(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """The extension declared on the request, and its ``Mcp-Name`` header naming the task (SEP-2663
    makes ``tasks/*`` name-bearing; the SDK's header ladder checks only the core methods)."""
    require_extension(ctx.params)
    headers = getattr(ctx.request, "headers", None)
    if headers is not None and decode_header_value(headers.get(MCP_NAME_HEADER)) != task_id:
        raise MCPError(
            HEADER_MISMATCH, f"{MCP_NAME_HEADER} header does not match the request body's 'taskId' parameter"
        )


def get(store: TaskStore, ctx: ServerRequestContext[Any, Any], task_id: str) -> dict[str, Any]:
    check_request(ctx, task_id)
    return detailed_task(store.get(task_id))


def update(store: TaskStore, ctx: ServerRequestContext[Any, Any], task_id: str, responses: Mapping[str, Any]) -> None:
    """Answers for a task waiting on input; for one that asks nothing they are ignored, as the spec allows."""
    check_request(ctx, task_id)
    store.get(task_id).answer(responses)


def cancel(store: TaskStore, ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """An empty ack, on a running task as on a finished one (idempotent)."""
    check_request(ctx, task_id)
    store.cancel(task_id)
