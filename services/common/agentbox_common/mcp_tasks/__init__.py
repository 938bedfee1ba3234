"""Long ``tools/call``s as MCP tasks, answered at once with a handle the client polls, cancels or
answers, instead of one HTTP request held open for the whole run, which a proxy may cut.

Two wires share one :class:`TaskStore`: the tasks extension of 2026-07-28 clients
(:mod:`.extension`) and the ``tasks`` capability of handshake-era ones (:mod:`.handshake`). The
methods both name (``tasks/get``, ``tasks/cancel``) answer in the shape of the request's protocol
version; ``tasks/update`` is the extension's, ``tasks/result`` and ``tasks/list`` the handshake era's."""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from . import extension, handshake
from .extension import EXTENSION, call_as_task, declares_tasks, task_input
from .handshake import TaskMiddleware
from .store import Status, Task, TaskPolicy, TaskStore, current_task, task_output

__all__ = [
    "EXTENSION",
    "Status",
    "Task",
    "TaskPolicy",
    "TaskStore",
    "call_as_task",
    "current_task",
    "declares_tasks",
    "install",
    "task_input",
    "task_output",
]

Context = ServerRequestContext[Any, Any]


class TaskRequest(types.RequestParams):
    """``tasks/get``, ``tasks/update``, ``tasks/result`` and ``tasks/cancel``'s params."""

    task_id: str
    input_responses: dict[str, Any] | None = None


def install(server: Server[Any], policy: TaskPolicy) -> None:
    """The ``tasks/*`` methods on ``server``, the extension declared in its capabilities, and the
    handshake era's task-making middleware (its ``capabilities.tasks`` is added at ``initialize``
    by the server builder)."""
    store = policy.store
    server.extensions[EXTENSION] = {}
    server.middleware.append(TaskMiddleware(policy))

    async def get(ctx: Context, params: TaskRequest) -> dict[str, Any]:
        if handshake.handshake_era(ctx):
            return handshake.get(store, params.task_id)
        return extension.get(store, ctx, params.task_id)

    async def update(ctx: Context, params: TaskRequest) -> dict[str, Any]:
        modern_only(ctx)
        extension.update(store, ctx, params.task_id, params.input_responses or {})
        return {}

    async def cancel(ctx: Context, params: TaskRequest) -> dict[str, Any]:
        if handshake.handshake_era(ctx):
            return handshake.cancel(store, params.task_id)
        extension.cancel(store, ctx, params.task_id)
        return {}

    async def result(ctx: Context, params: TaskRequest) -> dict[str, Any]:
        handshake_only(ctx)
        return await handshake.result(store, params.task_id)

    async def list_tasks(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
        handshake_only(ctx)
        return handshake.list_page(store, params.cursor)

    server.add_request_handler("tasks/get", TaskRequest, get)
    server.add_request_handler("tasks/update", TaskRequest, update)
    server.add_request_handler("tasks/cancel", TaskRequest, cancel)
    server.add_request_handler("tasks/result", TaskRequest, result)
    server.add_request_handler("tasks/list", types.PaginatedRequestParams, list_tasks)


def modern_only(ctx: Context) -> None:
    if handshake.handshake_era(ctx):
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)


def handshake_only(ctx: Context) -> None:
    """The extension has no ``tasks/result`` (``tasks/get`` inlines it) and no ``tasks/list``."""
    if not handshake.handshake_era(ctx):
        raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)
