"""The run service: the one way every surface — MCP ``run_prompt``, API mode's ``/run`` and OpenAI
endpoint, cron and Telegram — starts an agent run: the same checks, the same run directory, the same
per-workspace lock (:mod:`.locks`) and the same run loop (:func:`~.runner.run_with_json_retry`).
A surface parses its input into a :class:`RunSpec` and formats the :class:`~.runner.RunOutcome`.

* ``await service.prepare(spec)`` checks everything that can refuse a run before anything is created
  or started (a model outside ``AICODEBOX_AVAILABLE_MODELS``, an invalid schema, a level the adapter
  cannot run → :class:`RunRefused`), then makes the run directory (a bad workspace subpath →
  :class:`~.workspace.WorkspaceError`; ``workspace=None``: a new ephemeral directory
  ``/tmp/aicodebox/<uuid>``, mode 0700, removed when the run gives it back).
* ``await service.hold(request)`` takes the workspace without waiting
  (:class:`~.locks.WorkspaceBusy`, :class:`~.locks.TooManyRuns`); ``await held.release()`` gives it
  back. ``await service.run(request)`` runs the agent in a workspace already held;
  ``await service.execute(request)`` is the two together, released however the run ends.

Every refusal is a :class:`~agentbox_common.errors.PlaneError`; each surface maps them once.
Cancelling a run kills the agent's process group (the adapters' contract).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from agentbox_common.errors import Invalid

from .adapters.base import Adapter, AgentOptions, AgentRequest, AgentRequestError, EventSink
from .locks import WorkspaceLocks
from .runner import RunOutcome, check_request, run_with_json_retry
from .settings import McpModeSettings
from .workspace import Workspace

logger = logging.getLogger(__name__)


class RunRefused(Invalid):
    """The request cannot run (a bad model, schema or level); nothing was created or started."""


@dataclass(frozen=True, kw_only=True)
class RunSpec(AgentOptions):
    prompt: str
    #: Subdirectory of ``AICODEBOX_WORKSPACE`` (empty: the root; None: a new ephemeral directory).
    workspace: str | None = ""
    #: False (cron, Telegram, ``/run``) continues the workspace's latest session.
    no_continue: bool = False
    #: Seconds before the run is killed; None: ``AICODEBOX_RUN_TIMEOUT``.
    timeout: float | None = None


def ephemeral_root() -> Path:
    return Path(tempfile.gettempdir()) / "aicodebox"


def _make_ephemeral() -> Path:
    base = ephemeral_root()
    base.mkdir(parents=True, exist_ok=True)
    path = base / uuid.uuid4().hex
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)  # whatever the umask
    return path


class RunService:
    def __init__(self, settings: McpModeSettings, adapter: Adapter, locks: WorkspaceLocks | None = None) -> None:
        self.settings = settings
        self.adapter = adapter
        self.locks = locks or WorkspaceLocks(settings.state_dir / "locks", settings.max_concurrent_runs)
        self.workspace = Workspace(settings.workspace)
        #: Ephemeral run directories made by :meth:`prepare` and not yet given back.
        self._ephemeral: set[Path] = set()

    async def prepare(
        self, spec: RunSpec, schemas: Sequence[tuple[str, Mapping[str, Any]]] | None = None
    ) -> AgentRequest:
        """The request, checked, in its run directory. ``schemas``: the caller's schemas to check
        one by one (default: ``spec.json_schema``). RunRefused / WorkspaceError when it cannot run."""
        request = AgentRequest(
            prompt=spec.prompt,
            cwd=self.workspace.root,
            no_continue=spec.no_continue,
            timeout=spec.timeout or self.settings.run_timeout,
            **spec.options(),
        )
        try:
            await check_request(self.settings, self.adapter, request, schemas)
        except (ValueError, AgentRequestError) as exc:
            raise RunRefused(str(exc)) from None
        if spec.workspace is None:
            cwd = await anyio.to_thread.run_sync(_make_ephemeral)
            self._ephemeral.add(cwd)
        else:
            cwd = await anyio.to_thread.run_sync(self.workspace.run_directory, spec.workspace)
        return dataclasses.replace(request, cwd=cwd)

    async def hold(self, request: AgentRequest) -> HeldWorkspace:
        """Take the request's workspace at once (WorkspaceBusy / TooManyRuns otherwise; an ephemeral
        directory is then removed)."""
        try:
            self.locks.acquire(request.cwd)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.drop_ephemeral(request.cwd)
            raise
        return HeldWorkspace(self, request.cwd)

    async def drop_ephemeral(self, cwd: Path) -> None:
        """Remove ``cwd`` if it is an ephemeral directory of this service."""
        if cwd in self._ephemeral:
            self._ephemeral.discard(cwd)
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(cwd, ignore_errors=True))

    async def run(self, request: AgentRequest, on_event: EventSink | None = None) -> RunOutcome:
        """Run the agent in a workspace the caller holds; ``on_event`` sees its events as they come."""
        started = time.monotonic()
        outcome = await run_with_json_retry(
            self.adapter, request, self.settings.json_retries, self.settings.validation_timeout, on_event
        )
        failure = outcome.failure
        logger.info(
            "run in %s: exit %s, %d attempt(s), %.1fs%s",
            request.cwd,
            outcome.exit_code,
            len(outcome.attempts),
            time.monotonic() - started,
            f" ({failure[:200]})" if failure else "",
        )
        return outcome

    async def execute(self, request: AgentRequest, on_event: EventSink | None = None) -> RunOutcome:
        """Hold the workspace, run, give the workspace back (however the run ends)."""
        held = await self.hold(request)
        try:
            return await self.run(request, on_event)
        finally:
            with anyio.CancelScope(shield=True):
                await held.release()


class HeldWorkspace:
    """A workspace taken for one run; :meth:`release` gives it back (once) and removes it when it
    is ephemeral."""

    def __init__(self, service: RunService, cwd: Path) -> None:
        self.service, self.cwd = service, cwd
        self._released = False

    async def release(self) -> None:
        if self._released:
            return
        self._released = True
        self.service.locks.release(self.cwd)
        await self.service.drop_ephemeral(self.cwd)
