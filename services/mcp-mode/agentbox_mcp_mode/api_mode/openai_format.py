"""The OpenAI chat-completions wire format, as the API mode's endpoint speaks it: pure functions
from a request (body and ``x-aicodebox-*`` headers) to an agent run, and from the run back to a
``chat.completion`` object or ``chat.completion.chunk`` SSE events.

* ``messages``: ``system`` (and ``developer``) messages join into the system prompt; a single user
  message is the prompt verbatim; a longer chat becomes a ``[ROLE]`` transcript that asks the agent
  to answer the last user message.
* ``model``: exact names from ``AICODEBOX_AVAILABLE_MODELS``; a ``provider/`` prefix is stripped;
  the adapter's name (or an empty value) means the adapter's default model.
* ``response_format``: ``text``; ``json_object`` (= schema ``{"type": "object"}``); ``json_schema``.

Every malformed input raises :class:`RequestProblem` (status, message) naming the offending field
or header.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TRANSCRIPT_HEADER = "Continue this conversation. Respond to the last user message."
SYSTEM_ROLES = ("system", "developer")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


class RequestProblem(ValueError):
    """The request cannot be served; ``status`` is the HTTP status, ``code`` an OpenAI error code."""

    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_body(message: str, status: int, code: str | None = None) -> dict[str, Any]:
    """FastAPI's ``detail`` (as aicodebox answers) plus OpenAI's ``error`` object (for SDK clients)."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"detail": message, "error": {"message": message, "type": kind, "param": None, "code": code}}


# --- model --------------------------------------------------------------------------------------


def resolve_model(requested: str, adapter_name: str, available: Sequence[str]) -> str:
    """The model to hand the adapter ("" = its default); unknown names are a 404 like OpenAI's."""
    if requested in available:
        return requested
    bare = requested.rsplit("/", 1)[-1]
    if bare in ("", adapter_name):
        return ""
    if bare in available:
        return bare
    raise RequestProblem(
        404,
        f"model {requested!r} is not available; AICODEBOX_AVAILABLE_MODELS offers: {', '.join(available)}",
        "model_not_found",
    )


# --- messages -----------------------------------------------------------------------------------


def _text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise RequestProblem(400, f"messages[{index}].content: every part needs a type")
            if part["type"] not in ("text", "input_text"):
                raise RequestProblem(
                    400, f"messages[{index}].content: {part['type']!r} parts are not supported (text only)"
                )
            if not isinstance(part.get("text"), str):
                raise RequestProblem(400, f"messages[{index}].content: a text part needs a text string")
            texts.append(part["text"])
        return "\n".join(texts)
    raise RequestProblem(400, f"messages[{index}].content must be a string or a list of parts")


def flatten_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """``(prompt, system_prompt)`` for a chat."""
    system: list[str] = []
    turns: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if not isinstance(role, str):
            raise RequestProblem(400, f"messages[{index}].role is required")
        text = _text(message.get("content"), index)
        if role in SYSTEM_ROLES:
            if text:
                system.append(text)
        elif role in ("user", "assistant", "tool"):
            calls = message.get("tool_calls")
            if role == "assistant" and calls:
                text = f"{text}\n[tool calls] {json.dumps(calls, ensure_ascii=False)}".strip()
            if role == "tool" and message.get("tool_call_id"):
                text = f"(result of tool call {message['tool_call_id']})\n{text}"
            turns.append((role, text))
        else:
            raise RequestProblem(400, f"messages[{index}].role {role!r} is not supported")
    if not any(role == "user" for role, _ in turns):
        raise RequestProblem(400, "messages must contain a user message")
    if len(turns) == 1:
        prompt = turns[0][1]
    else:
        blocks = "\n\n".join(f"[{role.upper()}]\n{text}" for role, text in turns)
        prompt = f"{TRANSCRIPT_HEADER}\n\n{blocks}"
    if not prompt.strip():
        raise RequestProblem(400, "the user message is empty")
    return prompt, "\n\n".join(system)


# --- response_format ----------------------------------------------------------------------------


def schema_from_response_format(response_format: Any) -> dict[str, Any] | None:
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise RequestProblem(400, "response_format.json_schema.schema must be a JSON object")
        return schema
    raise RequestProblem(400, "response_format.type must be text, json_object or json_schema")


# --- x-aicodebox-* headers ----------------------------------------------------------------------


@dataclass(frozen=True)
class RunHeaders:
    #: None: an ephemeral workspace, removed after the run.
    workspace: str | None = None
    continue_session: bool = False
    append_system_prompt: str = ""
    json_schema: dict[str, Any] | None = None
    resume: str = ""
    timeout: float | None = None


def _header(headers: Mapping[str, str], name: str, legacy: str | None = None) -> tuple[str, str | None]:
    """``(name actually sent, value)``; values are UTF-8 when the client sent UTF-8 bytes."""
    for candidate in (name, legacy):
        if candidate and candidate in headers:
            value = headers[candidate]
            try:
                value = value.encode("latin-1").decode("utf-8")
            except (UnicodeEncodeError, UnicodeDecodeError):
                pass
            return candidate, value
    return name, None


def parse_headers(headers: Mapping[str, str]) -> RunHeaders:
    """The run options carried by ``x-aicodebox-*`` (and legacy ``x-claude-*``) headers."""
    _, workspace = _header(headers, "x-aicodebox-workspace", "x-claude-workspace")
    name, raw = _header(headers, "x-aicodebox-continue", "x-claude-continue")
    continue_session = False
    if raw is not None:
        if raw.strip().lower() not in _TRUE + _FALSE:
            raise RequestProblem(400, f"{name} must be a boolean (1/0, true/false, yes/no), got {raw!r}")
        continue_session = raw.strip().lower() in _TRUE
    _, append = _header(headers, "x-aicodebox-append-system-prompt", "x-claude-append-system-prompt")
    name, raw = _header(headers, "x-aicodebox-json-schema")
    schema = None
    if raw is not None and raw.strip():
        try:
            schema = json.loads(raw)
        except ValueError as exc:
            raise RequestProblem(400, f"{name} is not valid JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise RequestProblem(400, f"{name} must be a JSON object")
    _, resume = _header(headers, "x-aicodebox-resume")
    name, raw = _header(headers, "x-aicodebox-timeout-seconds")
    timeout = None
    if raw is not None and raw.strip():
        try:
            timeout = float(raw)
        except ValueError:
            raise RequestProblem(400, f"{name} must be a number of seconds, got {raw!r}") from None
        if not timeout > 0 or timeout == float("inf"):
            raise RequestProblem(400, f"{name} must be a positive number of seconds, got {raw!r}")
    return RunHeaders(
        workspace=(workspace or "").strip() or None,
        continue_session=continue_session,
        append_system_prompt=append or "",
        json_schema=schema,
        resume=(resume or "").strip(),
        timeout=timeout,
    )


# --- responses ----------------------------------------------------------------------------------


def _count(usage: Mapping[str, Any], *names: str) -> int:
    for name in names:
        value = usage.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return 0


def openai_usage(usage: Mapping[str, Any]) -> dict[str, int]:
    prompt = _count(usage, "input_tokens", "inputTokens", "input", "prompt_tokens")
    completion = _count(usage, "output_tokens", "outputTokens", "output", "completion_tokens")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True)
class CompletionMeta:
    """What every object of one completion shares."""

    id: str
    created: int
    model: str

    @classmethod
    def new(cls, model: str) -> CompletionMeta:
        return cls(f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time()), model)


def assistant_message(content: str, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if tool_calls:
        return {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {"role": "assistant", "content": content}


def completion(meta: CompletionMeta, message: dict[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": openai_usage(usage),
    }


def chunk(meta: CompletionMeta, delta: dict[str, Any], finish_reason: str | None = None) -> str:
    """One SSE event carrying a ``chat.completion.chunk``."""
    return sse(
        {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
    )


def usage_chunk(meta: CompletionMeta, usage: Mapping[str, Any]) -> str:
    """The extra last chunk of ``stream_options.include_usage``: no choices, the usage."""
    return sse(
        {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [],
            "usage": openai_usage(usage),
        }
    )


def sse(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


DONE = "data: [DONE]\n\n"
