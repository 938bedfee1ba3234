"""MCP's tasks extension (``io.modelcontextprotocol/tasks``, for 2026-07-28 clients): a long
``tools/call`` answered at once with a task handle the client polls (``tasks/get``), cancels
(``tasks/cancel``) or answers (``tasks/update``), instead of one HTTP request held open for the
whole run, which a proxy may cut.

The server decides which calls become tasks: a call of a tool :class:`TaskPolicy` names, from a
client that declared the extension on that request, which has not finished within
:data:`SYNC_WINDOW` (a quick call is answered as it always was). A task runs in the store's own task
group, so it outlives the request that made it and any reconnect; a finished task is kept
``retain_seconds`` past its end (its ``ttlMs`` says so). ``_meta["dev.agentbox/idempotency-key"]``
on a call returns the task already made under that key instead of running the call again, and
``_meta["dev.agentbox/output"]`` on ``tasks/get`` carries the output printed so far (the tool's
output sink, :func:`task_output`). Handshake-era clients are not offered tasks."""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import enum
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
IDEMPOTENCY_KEY = "dev.agentbox/idempotency-key"
OUTPUT = "dev.agentbox/output"
#: The spec's "Missing required client capability".
MISSING_CAPABILITY = -32021
#: A call still running after this long becomes a task; one done by then is answered as usual.
SYNC_WINDOW = 0.2
POLL_INTERVAL_MS = 500
#: Output a task keeps for ``tasks/get`` (its newest characters).
OUTPUT_KEPT = 64 * 1024
MAX_KEY_LENGTH = 200

#: The running task, for the tool's output sink (set in the task's own context).
_CURRENT: contextvars.ContextVar[Task | None] = contextvars.ContextVar("agentbox_mcp_task", default=None)


class Status(enum.StrEnum):
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(eq=False)
class Task:
    task_id: str
    tool: str
    #: What was called (name and arguments): a key used again for another call is refused.
    fingerprint: str
    created: float
    updated: float
    status: Status = Status.WORKING
    status_message: str | None = None
    #: The call's result (a ``CallToolResult`` as sent), or its JSON-RPC error.
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    ended: float | None = None
    output: str = ""
    output_total: int = 0
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    async def append_output(self, text: str) -> None:
        """The tool's output sink while it runs as this task."""
        self.output = (self.output + text)[-OUTPUT_KEPT:]
        self.output_total += len(text)
        self.updated = time.time()


def task_output() -> Callable[[str], Awaitable[None]] | None:
    """Where the running tool sends its output when it runs as a task (else ``None``)."""
    task = _CURRENT.get()
    return task.append_output if task is not None else None


@dataclass(frozen=True)
class TaskPolicy:
    """Which tools may become tasks, and the store they live in."""

    store: TaskStore
    eligible: Callable[[str], bool]


class TaskStore:
    """The tasks of one server: running ones in its task group, finished ones until they expire."""

    def __init__(self, *, retain_seconds: float = 600.0, max_running: int = 32) -> None:
        self.retain_seconds = retain_seconds
        self.max_running = max_running
        self._tasks: dict[str, Task] = {}
        self._keys: dict[str, str] = {}
        self._group: anyio.abc.TaskGroup | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The lifespan the tasks run in (a server's own); leaving it cancels those still running."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    @property
    def running_count(self) -> int:
        return sum(task.ended is None for task in self._tasks.values())

    def start(
        self, tool: str, arguments: Mapping[str, Any] | None, key: str | None, work: Callable[[], Awaitable[Any]]
    ) -> Task | None:
        """A new task running ``work``, or the one ``key`` made before; ``None`` when no more may run
        (the call is then answered as a plain one)."""
        self._prune()
        fingerprint = hashlib.sha256(json.dumps([tool, arguments], sort_keys=True, default=str).encode()).hexdigest()
        if key is not None and (known := self._keys.get(key)) is not None and known in self._tasks:
            task = self._tasks[known]
            if task.fingerprint != fingerprint:
                raise MCPError(types.INVALID_PARAMS, f"idempotency key {key!r} was used for another call")
            return task
        if self._group is None or self.running_count >= self.max_running:
            return None
        now = time.time()
        task = Task(secrets.token_urlsafe(24), tool, fingerprint, now, now)
        self._tasks[task.task_id] = task
        if key is not None:
            self._keys[key] = task.task_id
        self._group.start_soon(self._run, task, work)
        return task

    async def _run(self, task: Task, work: Callable[[], Awaitable[Any]]) -> None:
        _CURRENT.set(task)
        try:
            with task.scope:
                result = await work()
                task.result = _dumped(result)
                task.status = Status.COMPLETED
            if task.scope.cancelled_caught:
                task.status = Status.CANCELLED
        except MCPError as exc:
            task.error = exc.error.model_dump(mode="json", by_alias=True, exclude_none=True)
            task.status, task.status_message = Status.FAILED, exc.error.message
        except Exception as exc:  # the tool's own bug: the task fails, the server goes on
            task.error = {"code": types.INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}
            task.status, task.status_message = Status.FAILED, task.error["message"]
        finally:
            task.ended = task.updated = time.time()
            task.done.set()

    def get(self, task_id: str) -> Task:
        self._prune()
        task = self._tasks.get(task_id)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to retrieve task: Task not found (or expired)")
        return task

    def cancel(self, task_id: str) -> None:
        """Cancel a running task (its tool's process is killed as on a cancelled call); a finished
        one stays as it ended."""
        task = self.get(task_id)
        if task.ended is None:
            task.status, task.status_message = Status.CANCELLED, "cancelled by the client"
            task.scope.cancel()

    def ttl_ms(self, task: Task) -> int:
        """From creation: until now plus the retention while it runs, until its expiry once ended."""
        end = task.ended if task.ended is not None else time.time()
        return int((end - task.created + self.retain_seconds) * 1000)

    def _prune(self) -> None:
        now = time.time()
        for task_id, task in list(self._tasks.items()):
            if task.ended is not None and now - task.ended > self.retain_seconds:
                del self._tasks[task_id]
        self._keys = {key: task_id for key, task_id in self._keys.items() if task_id in self._tasks}


def _dumped(result: Any) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(result)


def _stamp(moment: float) -> str:
    return (
        datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def task_fields(store: TaskStore, task: Task) -> dict[str, Any]:
    """The spec's ``Task`` shape."""
    fields: dict[str, Any] = {
        "taskId": task.task_id,
        "status": task.status.value,
        "createdAt": _stamp(task.created),
        "lastUpdatedAt": _stamp(task.updated),
        "ttlMs": store.ttl_ms(task),
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if task.status_message is not None:
        fields["statusMessage"] = task.status_message
    return fields


def declares_tasks(params: Mapping[str, Any] | None) -> bool:
    """Whether a request's ``_meta`` declares the tasks extension among its client capabilities."""
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    capabilities = meta.get(CLIENT_CAPABILITIES) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and EXTENSION in extensions


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
    task = policy.store.start(name, arguments, idempotency_key(ctx.params), call)
    if task is None:
        return await call()
    with anyio.move_on_after(SYNC_WINDOW):
        await task.done.wait()
    if task.status == Status.COMPLETED and task.result is not None:
        return types.CallToolResult.model_validate(task.result)
    if task.status == Status.FAILED and task.error is not None:
        raise MCPError(task.error.get("code", types.INTERNAL_ERROR), task.error.get("message", ""))
    return {"resultType": "task", **task_fields(policy.store, task)}


class TaskRequest(types.RequestParams):
    """``tasks/get``, ``tasks/update`` and ``tasks/cancel``'s params (camelCase on the wire)."""

    task_id: str
    input_responses: dict[str, Any] | None = None


def install(server: Server[Any], store: TaskStore) -> None:
    """``tasks/get``, ``tasks/update`` and ``tasks/cancel`` on ``server``, and the extension declared
    in its capabilities."""
    server.extensions[EXTENSION] = {}

    def declared(ctx: ServerRequestContext[Any, Any], params: TaskRequest) -> Task:
        if not declares_tasks(ctx.params):
            raise MCPError(
                MISSING_CAPABILITY,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        return store.get(params.task_id)

    async def get(ctx: ServerRequestContext[Any, Any], params: TaskRequest) -> dict[str, Any]:
        task = declared(ctx, params)
        answer = task_fields(store, task)
        if task.status == Status.COMPLETED and task.result is not None:
            answer["result"] = task.result
        elif task.status == Status.FAILED and task.error is not None:
            answer["error"] = task.error
        answer["_meta"] = {OUTPUT: {"text": task.output, "total": task.output_total}}
        return answer

    async def update(ctx: ServerRequestContext[Any, Any], params: TaskRequest) -> dict[str, Any]:
        declared(ctx, params)  # no task of ours asks for input yet: responses are ignored, as the spec allows
        return {}

    async def cancel(ctx: ServerRequestContext[Any, Any], params: TaskRequest) -> dict[str, Any]:
        store.cancel(declared(ctx, params).task_id)
        return {}

    server.add_request_handler("tasks/get", TaskRequest, get)
    server.add_request_handler("tasks/update", TaskRequest, update)
    server.add_request_handler("tasks/cancel", TaskRequest, cancel)
