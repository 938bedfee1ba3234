"""The tasks of one MCP server, whichever wire their client speaks: each runs in the store's own
task group, so it outlives the request that made it and any reconnect, and a finished one is kept
for its retention (``ttlMs`` / ``ttl`` say how long) before it is forgotten."""

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
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

#: Output a task keeps for ``tasks/get`` (its newest characters).
OUTPUT_KEPT = 64 * 1024

#: The running task, for the tool's output sink and input requests (set in the task's own context).
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
    #: Seconds the task is kept once ended (its ``ttlMs`` counts them from its end).
    retain_seconds: float
    #: Whether its client can be asked for input (``input_required``): it answers elicitation.
    interactive: bool = False
    status: Status = Status.WORKING
    status_message: str | None = None
    #: The call's result (a ``CallToolResult`` as sent), or its JSON-RPC error.
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    ended: float | None = None
    output: str = ""
    output_total: int = 0
    #: While ``input_required``: what the tool asks the client for (the spec's ``inputRequests``).
    input_requests: dict[str, dict[str, Any]] | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    _answer: anyio.Event | None = None
    _responses: dict[str, Any] = field(default_factory=dict)

    async def append_output(self, text: str) -> None:
        """The tool's output sink while it runs as this task."""
        self.output = (self.output + text)[-OUTPUT_KEPT:]
        self.output_total += len(text)
        self.updated = time.time()

    async def ask(self, requests: dict[str, dict[str, Any]], message: str | None = None) -> dict[str, Any]:
        """Put the task in ``input_required`` until the client answers every one of ``requests``
        (``tasks/update``); the answers by key. Cancelling the caller withdraws the question."""
        self.input_requests, self._responses, self._answer = requests, {}, anyio.Event()
        self._set(Status.INPUT_REQUIRED, message)
        try:
            await self._answer.wait()
            return self._responses
        finally:
            self.input_requests, self._answer = None, None
            if self.status == Status.INPUT_REQUIRED:
                self._set(Status.WORKING, None)

    def answer(self, responses: Mapping[str, Any]) -> None:
        """The client's ``inputResponses``: those for keys asked are kept, the others ignored (as
        the spec allows); once every key is answered the tool goes on."""
        if self.input_requests is None or self._answer is None:
            return
        self._responses.update({key: value for key, value in responses.items() if key in self.input_requests})
        if self._responses.keys() >= self.input_requests.keys():
            self._answer.set()

    def _set(self, status: Status, message: str | None) -> None:
        self.status, self.status_message, self.updated = status, message, time.time()


def current_task() -> Task | None:
    """The task the running tool belongs to (``None`` outside one)."""
    return _CURRENT.get()


def task_output() -> Callable[[str], Awaitable[None]] | None:
    """Where the running tool sends its output when it runs as a task (else ``None``)."""
    task = _CURRENT.get()
    return task.append_output if task is not None else None


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
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        key: str | None,
        work: Callable[[], Awaitable[Any]],
        *,
        retain_seconds: float | None = None,
        interactive: bool = False,
    ) -> Task | None:
        """A new task running ``work``, or the one ``key`` made before; ``None`` when no more may run
        (the call is then answered as a plain one). ``retain_seconds``: the client's wish, at most
        the store's."""
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
        retain = self.retain_seconds if retain_seconds is None else max(0.0, min(retain_seconds, self.retain_seconds))
        task = Task(secrets.token_urlsafe(24), tool, fingerprint, now, now, retain, interactive)
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
            task.input_requests = None
            task.done.set()

    def get(self, task_id: str) -> Task:
        self._prune()
        task = self._tasks.get(task_id)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to retrieve task: Task not found (or expired)")
        return task

    def tasks(self) -> list[Task]:
        """Every task kept, oldest first."""
        self._prune()
        return sorted(self._tasks.values(), key=lambda task: task.created)

    def cancel(self, task_id: str) -> Task:
        """Cancel a running task (its tool's process is killed as on a cancelled call); a finished
        one stays as it ended."""
        task = self.get(task_id)
        if task.ended is None:
            task.status, task.status_message = Status.CANCELLED, "cancelled by the client"
            task.scope.cancel()
        return task

    @staticmethod
    def ttl_ms(task: Task) -> int:
        """From creation: until now plus the retention while it runs, until its expiry once ended."""
        end = task.ended if task.ended is not None else time.time()
        return int((end - task.created + task.retain_seconds) * 1000)

    def _prune(self) -> None:
        now = time.time()
        for task_id, task in list(self._tasks.items()):
            if task.ended is not None and now - task.ended > task.retain_seconds:
                del self._tasks[task_id]
        self._keys = {key: task_id for key, task_id in self._keys.items() if task_id in self._tasks}


@dataclass(frozen=True)
class TaskPolicy:
    """Which tools may become tasks, and the store they live in."""

    store: TaskStore
    eligible: Callable[[str], bool]


def _dumped(result: Any) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(result)


def base_fields(task: Task) -> dict[str, Any]:
    """What both wires' ``Task`` carry under the same names (the durations are named per wire)."""
    fields: dict[str, Any] = {
        "taskId": task.task_id,
        "status": task.status.value,
        "createdAt": stamp(task.created),
        "lastUpdatedAt": stamp(task.updated),
    }
    if task.status_message is not None:
        fields["statusMessage"] = task.status_message
    return fields


def stamp(moment: float) -> str:
    """An ISO 8601 UTC timestamp, as both wires carry them."""
    return (
        datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )
