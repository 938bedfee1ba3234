"""Lifecycle hooks: shell commands run when the sandbox stops (the gateway's shutdown, i.e. the
container's SIGTERM through supervisord), by ``priority`` (lower first; equal priorities in parallel),
each bounded by its ``timeout``. Registered through ``/v1/sandbox/hooks`` or, at start-up, from
``SANDBOX_SHUTDOWN_HOOKS`` (a JSON list of ``{name, command, timeout?, priority?}``)."""

from __future__ import annotations

import asyncio
import builtins
import itertools
import json
import logging
import os
import re
from dataclasses import dataclass

from agentbox_common.errors import Invalid, NotFound
from agentbox_common.processes import spawn_sandboxed, terminate_process_group

logger = logging.getLogger(__name__)

EVENTS = frozenset({"shutdown"})
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 300.0
MAX_HOOKS = 64
#: A command's length in UTF-8 bytes: well under the kernel's limit of one argument (128 KiB, E2BIG
#: past it), and a registered hook is kept in memory for the gateway's life.
MAX_COMMAND_BYTES = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class HookError(Invalid):
    """A hook that cannot be registered (bad name, event, timeout; too many)."""


class HookNotFound(NotFound, HookError): ...


@dataclass(frozen=True)
class Hook:
    name: str
    command: str
    event: str = "shutdown"
    timeout: float = DEFAULT_TIMEOUT
    priority: int = 0
    source: str = "api"


@dataclass(frozen=True)
class HookRun:
    name: str
    exit_code: int | None
    timed_out: bool


def check_hook(hook: Hook) -> Hook:
    if not _NAME.match(hook.name):
        raise HookError(f"invalid hook name {hook.name!r}: 1-64 letters, digits, '.', '_' or '-'")
    if hook.event not in EVENTS:
        raise HookError(f"unknown event {hook.event!r}: use {', '.join(sorted(EVENTS))}")
    if not hook.command.strip():
        raise HookError("command must not be empty")
    try:
        command = os.fsencode(hook.command)  # as the kernel gets it
    except UnicodeEncodeError:
        raise HookError("command must be text (it has an unpaired surrogate)") from None
    if len(command) > MAX_COMMAND_BYTES:
        raise HookError(f"command must be at most {MAX_COMMAND_BYTES} bytes (UTF-8); put a longer one in a script")
    if b"\0" in command:
        raise HookError("command must not contain a NUL character")
    if not 0 < hook.timeout <= MAX_TIMEOUT:
        raise HookError(f"timeout must be between 0 and {MAX_TIMEOUT:g} seconds")
    return hook


def hooks_from_env(raw: str) -> list[Hook]:
    """``SANDBOX_SHUTDOWN_HOOKS``; an unusable entry is logged and skipped, never fatal."""
    if not raw.strip():
        return []
    try:
        entries = json.loads(raw)
    except ValueError as exc:
        logger.warning("SANDBOX_SHUTDOWN_HOOKS is not JSON (%s); no hooks registered from it", exc)
        return []
    hooks = []
    for position, entry in enumerate(entries if isinstance(entries, list) else []):
        try:
            hooks.append(
                check_hook(
                    Hook(
                        name=str(entry.get("name") or f"env-{position}"),
                        command=str(entry["command"]),
                        timeout=float(entry.get("timeout", DEFAULT_TIMEOUT)),
                        priority=int(entry.get("priority", 0)),
                        source="env",
                    )
                )
            )
        except (AttributeError, KeyError, TypeError, ValueError, HookError) as exc:
            logger.warning("SANDBOX_SHUTDOWN_HOOKS entry %d skipped: %s", position, exc)
    return hooks


class HookPlane:
    def __init__(self, from_env: str = "") -> None:
        self._hooks: dict[str, Hook] = {hook.name: hook for hook in hooks_from_env(from_env)}

    def list(self, event: str | None = None) -> list[Hook]:
        hooks = sorted(self._hooks.values(), key=lambda h: (h.priority, h.name))
        return [h for h in hooks if event is None or h.event == event]

    def register(self, hook: Hook) -> Hook:
        """Add or replace the hook of that name."""
        check_hook(hook)
        if hook.name not in self._hooks and len(self._hooks) >= MAX_HOOKS:
            raise HookError(f"at most {MAX_HOOKS} hooks")
        self._hooks[hook.name] = hook
        return hook

    def remove(self, name: str) -> Hook:
        hook = self._hooks.pop(name, None)
        if hook is None:
            raise HookNotFound(f"no hook {name!r}")
        return hook

    async def run(self, event: str) -> builtins.list[HookRun]:
        """Every hook of ``event``, priority group by group; a failing or hanging hook stops nothing."""
        runs: builtins.list[HookRun] = []
        for _, group in itertools.groupby(self.list(event), key=lambda h: h.priority):
            runs += await asyncio.gather(*(_run(hook) for hook in group))
        return runs

    async def aclose(self) -> None:
        return None


async def _run(hook: Hook) -> HookRun:
    """Run one hook; one that cannot even start is logged, and the others and the shutdown go on."""
    try:
        process = await spawn_sandboxed(
            "bash", "-c", hook.command, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
    except Exception as exc:  # E2BIG, no bash, no fork: this hook fails, not the shutdown
        logger.warning("%s hook %s could not start: %s", hook.event, hook.name, exc)
        return HookRun(hook.name, None, False)
    try:
        code = await asyncio.wait_for(process.wait(), hook.timeout)
    except TimeoutError:
        await terminate_process_group(process, grace=1.0)
        logger.warning("%s hook %s did not finish within %g s; stopped", hook.event, hook.name, hook.timeout)
        return HookRun(hook.name, None, True)
    if code:
        logger.warning("%s hook %s exited with %d", hook.event, hook.name, code)
    return HookRun(hook.name, code, False)
