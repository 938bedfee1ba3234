"""The tasks extension (``io.modelcontextprotocol/tasks``) for the official Python client, the way an
application adds an extension the SDK does not ship: a :class:`ClientExtension` claiming the
``resultType: "task"`` shape of ``tools/call`` (resolved by polling ``tasks/get``), and the
``tasks/*`` requests as typed ``Request`` models (``Mcp-Name`` carries the task id)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anyio
from mcp import types
from mcp.client import ClaimContext, ClientExtension, ResultClaim

EXTENSION = "io.modelcontextprotocol/tasks"
OUTPUT = "dev.agentbox/output"


class TaskParams(types.RequestParams):
    task_id: str
    input_responses: dict[str, Any] | None = None


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(types.Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskParams
    name_param = "taskId"


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class CreatedTask(types.Result):
    """A ``tools/call`` answered with a task handle."""

    result_type: Literal["task"] = "task"  # type: ignore[assignment]
    task_id: str
    status: str
    created_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class DetailedTask(types.Result):
    """``tasks/get``'s answer."""

    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None

    @property
    def output(self) -> str:
        return str(((self.meta or {}).get(OUTPUT) or {}).get("text", ""))


class TasksClient(ClientExtension):
    """Declares the extension; a task handle is finished by polling until the task ends."""

    identifier = EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        while True:
            task = await ctx.session.send_request(GetTask(params=TaskParams(task_id=created.task_id)), DetailedTask)
            if task.status == "completed" and task.result is not None:
                return types.CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {created.task_id} {task.status}: {task.error or task.status_message}")
            await anyio.sleep((created.poll_interval_ms or 500) / 1000)
