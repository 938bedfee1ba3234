"""The run service the foreground modes (cron, Telegram) start agent runs through: the same
adapter, the same run loop (:func:`~.runner.run_with_json_retry`) and the same per-workspace lock
as MCP ``run_prompt``, so every surface runs the agent one way.

``await service.prepare(spec)`` checks everything that can refuse a run (a model outside
``AICODEBOX_AVAILABLE_MODELS``, a level the adapter cannot run, a bad workspace subpath →
:class:`RunRefused`) and creates the run directory; ``await service.execute(request)`` takes the
workspace (:class:`~.locks.WorkspaceBusy` at once when any process holds it) and runs the agent.
Cancelling ``execute`` kills the agent's process group (the adapters' contract).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import anyio

from .adapters.base import Adapter, AgentRequest, AgentRequestError
from .locks import WorkspaceLocks
from .runner import RunOutcome, check_request, run_with_json_retry
from .settings import McpModeSettings
from .workspace import Workspace, WorkspaceError


class RunRefused(ValueError):
    """The run cannot start (bad model, level or workspace); nothing was started."""


@dataclass(frozen=True)
class RunSpec:
    prompt: str
    #: Subdirectory of ``AICODEBOX_WORKSPACE`` (empty: the root).
    workspace: str = ""
    model: str = ""
    system_prompt: str = ""
    append_system_prompt: str = ""
    #: Cron and Telegram continue the workspace's session by default.
    no_continue: bool = False
    resume: str = ""
    thinking: str = ""


class AgentRunService:
    def __init__(self, settings: McpModeSettings, adapter: Adapter, locks: WorkspaceLocks | None = None) -> None:
        self.settings = settings
        self.adapter = adapter
        self.locks = locks or WorkspaceLocks(settings.state_dir / "locks", settings.max_concurrent_runs)
        self.workspace = Workspace(settings.workspace)

    async def prepare(self, spec: RunSpec) -> AgentRequest:
        request = AgentRequest(
            prompt=spec.prompt,
            cwd=self.workspace.root,
            model=spec.model,
            system_prompt=spec.system_prompt,
            append_system_prompt=spec.append_system_prompt,
            no_continue=spec.no_continue,
            resume=spec.resume,
            thinking=spec.thinking,
            timeout=self.settings.run_timeout,
        )
        try:
            await check_request(self.settings, self.adapter, request)
            cwd = await anyio.to_thread.run_sync(self.workspace.run_directory, spec.workspace)
        except (ValueError, AgentRequestError, WorkspaceError) as exc:
            raise RunRefused(str(exc)) from None
        return dataclasses.replace(request, cwd=cwd)

    async def execute(self, request: AgentRequest) -> RunOutcome:
        with self.locks.hold(request.cwd):
            return await run_with_json_retry(
                self.adapter, request, self.settings.json_retries, self.settings.validation_timeout
            )
