"""Tasks on the handshake-era wire (MCP 2025-11-25's ``tasks`` capability), which clients such as the
TypeScript SDK's ``client.experimental.tasks.callToolStream`` speak: the server declares
``capabilities.tasks`` at ``initialize`` and ``execution.taskSupport`` on its long tools; a
``tools/call`` carrying ``params.task`` is answered at once with ``{task: Task}``; ``tasks/get``
polls, ``tasks/result`` waits for the tool's own answer, ``tasks/list`` pages through the tasks kept,
``tasks/cancel`` answers the cancelled task.

The call itself runs through the server's whole pipeline (the middleware's ``call_next``) inside
the task, so its result is shaped exactly as a plain call's would be."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .extension import POLL_INTERVAL_MS, idempotency_key, output_meta
from .store import Status, Task, TaskPolicy, TaskStore, base_fields

#: ``capabilities.tasks`` at ``initialize``: listed, cancelled, and made from ``tools/call``.
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: ``tasks/list``'s page size.
PAGE = 100
TERMINAL = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})


def handshake_era(ctx: ServerRequestContext[Any, Any]) -> bool:
    return ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS


def task_fields(task: Task) -> dict[str, Any]:
    """2025-11-25's ``Task``: ``ttl`` and ``pollInterval`` in milliseconds."""
    return {**base_fields(task), "ttl": TaskStore.ttl_ms(task), "pollInterval": POLL_INTERVAL_MS}


def requested_retention(params: Mapping[str, Any]) -> float | None:
    """The ``task.ttl`` the client asked for, in seconds (``None``: none asked)."""
    task = params.get("task")
    ttl = task.get("ttl") if isinstance(task, Mapping) else None
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        raise MCPError(types.INVALID_PARAMS, "task.ttl must be a non-negative integer of milliseconds")
    return ttl / 1000


class TaskMiddleware:
    """Turns a handshake-era ``tools/call`` with ``params.task`` into a task (``Server.middleware``:
    the SDK would otherwise hold ``{task}`` against the ``CallToolResult`` shape). A call of a tool
    the policy does not name is answered as a plain call, as a receiver that does not augment that
    request does."""

    def __init__(self, policy: TaskPolicy) -> None:
        self.policy = policy

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params
        if ctx.method != "tools/call" or not handshake_era(ctx) or not isinstance(params, Mapping):
            return await call_next(ctx)
        name = params.get("name")
        if not isinstance(params.get("task"), Mapping) or not isinstance(name, str) or not self.policy.eligible(name):
            return await call_next(ctx)
        arguments = params.get("arguments")
        task = self.policy.store.start(
            name,
            arguments if isinstance(arguments, Mapping) else None,
            idempotency_key(params),
            lambda: call_next(ctx),
            retain_seconds=requested_retention(params),
        )
        if task is None:
            raise MCPError(types.INTERNAL_ERROR, "Too many tasks running: try again once one has finished")
        return {"task": task_fields(task)}


def get(store: TaskStore, task_id: str) -> dict[str, Any]:
    task = store.get(task_id)
    return {**task_fields(task), "_meta": output_meta(task)}


async def result(store: TaskStore, task_id: str) -> dict[str, Any]:
    """The tool's own answer once the task ends (waiting until then), tagged with its task."""
    task = store.get(task_id)
    await task.done.wait()
    if task.status == Status.COMPLETED and task.result is not None:
        meta = {**task.result.get("_meta", {}), RELATED_TASK: {"taskId": task.task_id}}
        return {**task.result, "_meta": meta}
    if task.status == Status.FAILED and task.error is not None:
        raise MCPError(
            task.error.get("code", types.INTERNAL_ERROR), task.error.get("message", ""), task.error.get("data")
        )
    raise MCPError(types.INVALID_PARAMS, f"Task {task_id} was cancelled: it has no result")


def list_page(store: TaskStore, cursor: str | None) -> dict[str, Any]:
    tasks = store.tasks()
    start = 0
    if cursor is not None:
        if not cursor.isdigit() or int(cursor) > len(tasks):
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
        start = int(cursor)
    page: dict[str, Any] = {"tasks": [task_fields(task) for task in tasks[start : start + PAGE]]}
    if start + PAGE < len(tasks):
        page["nextCursor"] = str(start + PAGE)
    return page


def cancel(store: TaskStore, task_id: str) -> dict[str, Any]:
    """The task as cancelled; one that already ended is an error (2025-11-25 says -32602)."""
    task = store.get(task_id)
    if task.status in TERMINAL:
        raise MCPError(types.INVALID_PARAMS, f"Cannot cancel task: already in terminal status '{task.status.value}'")
    return task_fields(store.cancel(task_id))
