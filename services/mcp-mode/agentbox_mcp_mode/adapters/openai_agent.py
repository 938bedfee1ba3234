"""The built-in agent (``AICODEBOX_ADAPTER=openai``): a tool-calling loop against any
OpenAI-compatible chat-completions endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), so MCP mode
works with local model servers and no vendor CLI.

Each turn posts the conversation with the workspace tools (see :mod:`.openai_agent_tools`); tool calls are
executed and their results appended, until the model answers without tool calls (the final answer)
or ``AICODEBOX_AGENT_MAX_TURNS`` model calls have been made. Mapping of the request:

* ``model`` → the request's ``model`` (default: the first of ``AICODEBOX_AVAILABLE_MODELS``);
* ``system_prompt`` replaces the built-in system prompt, ``append_system_prompt`` is added to it;
* ``thinking`` → ``reasoning_effort``;
* ``json_schema`` → an instruction in the system prompt (validation is the runner's job);
* sessions: a fresh one by default, ``no_continue=False`` continues the workspace's latest,
  ``resume=<id>`` a named one (see :mod:`.sessions`); history is saved after every whole turn.

An unreachable endpoint or an HTTP error ends the run with exit code 1 and a message naming the
URL; a timeout ends it with 124 (a running shell command is killed with its process group).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import httpx

from agentbox_common.http import verified_tls

from ..settings import McpModeSettings
from .base import TIMEOUT_EXIT_CODE, Adapter, AgentEvent, AgentRequest, AgentRequestError
from .openai_agent_tools import TOOL_DEFINITIONS, AgentTools
from .sessions import Session, SessionStore

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in the directory {cwd}. Use the tools to inspect and change files "
    "and to run commands there; paths are relative to that directory. Work until the task is done, "
    "then reply with your final answer (no tool call)."
)


class EndpointError(Exception):
    """The chat-completions endpoint failed; the message names the URL."""


class OpenAIAgentAdapter(Adapter):
    name = "openai"

    def __init__(self, settings: McpModeSettings) -> None:
        super().__init__(settings)
        self.sessions = SessionStore(settings.state_dir / "openai-agent")
        self.url = f"{settings.openai_base_url}/chat/completions"

    def _model(self, request: AgentRequest) -> str:
        return request.model or (self.settings.available_models[0] if self.settings.available_models else "")

    def validate(self, request: AgentRequest) -> None:
        if not self._model(request):
            raise AgentRequestError("no model: pass model or set AICODEBOX_AVAILABLE_MODELS")
        if request.resume and not self.sessions.valid_id(request.resume):
            raise AgentRequestError(f"resume: {request.resume!r} is not a session id of the built-in agent")

    def _system_prompt(self, request: AgentRequest) -> str:
        text = request.system_prompt or DEFAULT_SYSTEM_PROMPT.format(cwd=request.cwd)
        if request.append_system_prompt:
            text = f"{text}\n\n{request.append_system_prompt}"
        if request.json_schema is not None:
            text += (
                "\n\nYour final answer must be only a JSON value matching this JSON Schema, with no prose "
                f"and no code fences:\n{json.dumps(request.json_schema)}"
            )
        return text

    def _open_session(self, request: AgentRequest) -> Session | None:
        if request.resume:
            return self.sessions.load(request.resume)
        if not request.no_continue:
            return self.sessions.latest(request.cwd) or self.sessions.new(request.cwd)
        return self.sessions.new(request.cwd)

    async def _complete(self, client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.settings.openai_api_key}"} if self.settings.openai_api_key else {}
        try:
            response = await client.post(self.url, json=body, headers=headers)
        except httpx.TransportError as exc:
            raise EndpointError(f"cannot reach OpenAI-compatible endpoint {self.url}: {exc!r}") from None
        if response.status_code >= 400:
            raise EndpointError(f"{self.url} answered HTTP {response.status_code}: {response.text[:500]}")
        try:
            payload = response.json()
            message = payload["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
        except (ValueError, LookupError, TypeError) as exc:
            raise EndpointError(f"{self.url} returned an unexpected body ({exc}): {response.text[:500]}") from None
        usage = payload.get("usage")
        return {"message": message, "usage": usage if isinstance(usage, dict) else {}}

    async def stream(self, request: AgentRequest) -> AsyncGenerator[AgentEvent, None]:
        self.validate(request)
        loop = asyncio.get_running_loop()
        deadline = None if request.timeout is None else loop.time() + request.timeout

        def remaining() -> float | None:
            return None if deadline is None else deadline - loop.time()

        session = await anyio.to_thread.run_sync(self._open_session, request)
        if session is None:
            yield AgentEvent("stop", reason="error", exit_code=1, stderr=f"session not found: {request.resume}")
            return
        yield AgentEvent("session", session_id=session.id)
        cwd = Path(request.cwd)
        messages = [*session.messages, {"role": "user", "content": request.prompt}]
        body: dict[str, Any] = {
            "model": self._model(request),
            "tools": TOOL_DEFINITIONS,
            "tool_choice": "auto",
        }
        if request.thinking:
            body["reasoning_effort"] = request.thinking
        system = {"role": "system", "content": self._system_prompt(request)}
        tools = AgentTools(cwd, remaining)

        async def save() -> None:
            session.messages = messages
            await anyio.to_thread.run_sync(self.sessions.save, session, cwd)

        def stopped(reason: str, exit_code: int, stderr: str, text: str = "") -> AgentEvent:
            return AgentEvent(
                "stop", text=text, reason=reason, exit_code=exit_code, stderr=stderr, session_id=session.id
            )

        timeout = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=10.0)
        async with httpx.AsyncClient(timeout=timeout, verify=verified_tls()) as client:
            for _turn in range(self.settings.agent_max_turns):
                try:
                    reply = await asyncio.wait_for(
                        self._complete(client, {**body, "messages": [system, *messages]}), remaining()
                    )
                except TimeoutError:
                    yield stopped("timeout", TIMEOUT_EXIT_CODE, f"timeout after {request.timeout:g}s")
                    return
                except EndpointError as exc:
                    yield stopped("error", 1, str(exc))
                    return
                usage = reply["usage"]
                if usage:
                    yield AgentEvent(
                        "usage",
                        usage={
                            "input_tokens": usage.get("prompt_tokens", 0),
                            "output_tokens": usage.get("completion_tokens", 0),
                        },
                    )
                message = reply["message"]
                content = message.get("content") if isinstance(message.get("content"), str) else ""
                calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
                if content:
                    yield AgentEvent("delta", text=content)
                assistant: dict[str, Any] = {"role": "assistant", "content": content or None}
                if not calls:
                    messages = [*messages, assistant]
                    await save()
                    yield stopped("stop", 0, "", content)
                    return
                assistant["tool_calls"] = [_normalise_call(call, index) for index, call in enumerate(calls)]
                results = []
                for call in assistant["tool_calls"]:
                    try:
                        output = await asyncio.wait_for(
                            tools.call(call["function"]["name"], call["function"]["arguments"]), remaining()
                        )
                    except TimeoutError:
                        yield stopped("timeout", TIMEOUT_EXIT_CODE, f"timeout after {request.timeout:g}s")
                        return
                    results.append({"role": "tool", "tool_call_id": call["id"], "content": output})
                messages = [*messages, assistant, *results]
                await save()
        yield stopped(
            "error",
            1,
            f"no final answer after {self.settings.agent_max_turns} turns (AICODEBOX_AGENT_MAX_TURNS)",
        )


def _normalise_call(call: dict[str, Any], index: int) -> dict[str, Any]:
    """A tool call as the endpoint expects it back: string arguments, an id, type function."""
    given = call.get("function")
    function: dict[str, Any] = given if isinstance(given, dict) else {}
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": str(call.get("id") or f"call_{index}"),
        "type": "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }
