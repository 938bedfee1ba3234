"""The one interface every agent adapter implements, so MCP ``run_prompt``, API ``/run`` and the
OpenAI endpoint drive Claude Code, Codex and the built-in agent the same way.

* :class:`AgentRequest` — what to run: prompt, working directory, model, system prompts, session
  choice (``no_continue`` / ``resume``), ``thinking``, an optional ``json_schema`` hint, timeout.
* ``Adapter.stream(request)`` — an async iterator of :class:`AgentEvent`: ``delta`` (a piece of the
  answer, for streaming clients), ``session`` (the session id, as soon as known), ``usage`` (token
  counts of one step) and exactly one final ``stop`` carrying the final answer, the reason
  (``stop`` / ``error`` / ``timeout``), the exit code and diagnostics.
* ``Adapter.run(request)`` — the same stream folded into an :class:`AgentResult`.

Adapters never raise for a failed run: a missing binary (exit 127), a timeout (exit 124, the whole
process group killed) or an unreachable endpoint end in a ``stop`` event with a non-zero exit code
and a message naming the cause. A request that cannot be run at all (an unknown ``thinking`` level,
say) raises :class:`AgentRequestError` from :meth:`Adapter.validate` before anything starts.
Cancelling the consumer (client disconnect) kills the agent's process group. Always consume
``stream`` inside ``contextlib.aclosing`` so an early exit cleans up at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentbox_common.errors import Invalid

if TYPE_CHECKING:
    from ..settings import McpModeSettings

TIMEOUT_EXIT_CODE = 124
MISSING_BINARY_EXIT_CODE = 127

EventType = Literal["delta", "session", "usage", "stop"]


class AgentRequestError(Invalid):
    """The request cannot be run by this adapter; nothing was started."""


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """How the agent answers a prompt: the same options in a run's spec and in an adapter's request."""

    model: str = ""
    system_prompt: str = ""
    append_system_prompt: str = ""
    #: A session id to continue; wins over ``no_continue``.
    resume: str = ""
    thinking: str = ""
    json_schema: Mapping[str, Any] | None = None

    def options(self) -> dict[str, Any]:
        """These options alone, to pass on to another record that has them."""
        return {option.name: getattr(self, option.name) for option in dataclasses.fields(AgentOptions)}


@dataclass(frozen=True, kw_only=True)
class AgentRequest(AgentOptions):
    prompt: str
    cwd: Path
    #: True: a new session. False: continue the latest session of ``cwd``.
    no_continue: bool = True
    #: Seconds before the run is killed; None = no limit.
    timeout: float | None = None

    def fresh(self, prompt: str) -> AgentRequest:
        """The same request with another prompt, in a new session (json_schema retries)."""
        return dataclasses.replace(self, prompt=prompt, no_continue=True, resume="")


@dataclass(frozen=True)
class AgentEvent:
    type: EventType
    #: delta: a piece of the answer; stop: the final answer.
    text: str = ""
    session_id: str = ""
    usage: Mapping[str, Any] = field(default_factory=dict)
    #: stop only: "stop", "error" or "timeout".
    reason: str = ""
    exit_code: int = 0
    stderr: str = ""


@dataclass
class AgentResult:
    text: str = ""
    session_id: str = ""
    exit_code: int = 0
    usage: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    reason: str = "stop"


#: Receives each event of a run as it comes.
EventSink = Callable[[AgentEvent], Awaitable[None]]


def add_usage(total: dict[str, Any], part: Mapping[str, Any]) -> dict[str, Any]:
    """Sum token counts: numbers are added, other values keep the first seen."""
    for key, value in part.items():
        current = total.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if current is None or (isinstance(current, (int, float)) and not isinstance(current, bool)):
                total[key] = (current or 0) + value
        elif key not in total:
            total[key] = value
    return total


class Adapter(ABC):
    """Base class; subclasses set ``name`` and implement :meth:`stream`."""

    name: str = ""

    def __init__(self, settings: McpModeSettings) -> None:
        self.settings = settings

    def validate(self, request: AgentRequest) -> None:  # noqa: B027 - optional hook, most requests are fine
        """Raise :class:`AgentRequestError` for a request this adapter cannot run."""

    @abstractmethod
    def stream(self, request: AgentRequest) -> AsyncGenerator[AgentEvent, None]:
        """Run the agent, yielding events; the last one is ``stop``."""

    async def run(self, request: AgentRequest, on_event: EventSink | None = None) -> AgentResult:
        """Run to the end; ``on_event`` sees every event as it comes (MCP progress)."""
        result = AgentResult()
        deltas: list[str] = []
        stopped = False
        async with contextlib.aclosing(self.stream(request)) as events:
            async for event in events:
                if on_event is not None:
                    await on_event(event)
                if event.type == "delta":
                    deltas.append(event.text)
                elif event.type == "session" and event.session_id:
                    result.session_id = event.session_id
                elif event.type == "usage":
                    add_usage(result.usage, event.usage)
                elif event.type == "stop":
                    stopped = True
                    result.text = event.text if event.text else "".join(deltas)
                    result.exit_code = event.exit_code
                    result.stderr = event.stderr
                    result.reason = event.reason or ("stop" if event.exit_code == 0 else "error")
                    if event.session_id:
                        result.session_id = event.session_id
        if not stopped:  # a custom adapter that forgot its stop event
            result.text, result.exit_code, result.reason = "".join(deltas), 1, "error"
            result.stderr = f"adapter {self.name} ended without a stop event"
        return result
