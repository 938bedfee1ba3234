"""One agent run as a surface sees it: the adapter run plus, with a ``json_schema``, parsing,
validation and fresh-session retries (aicodebox's ``run_with_json_retry``).

Parsing tolerates what models wrap around JSON: candidates are the raw text, the text with edge
code fences stripped, each fenced block (last first), then the first brace-balanced ``{…}`` and the
first ``[…]``; the first that parses *and* validates wins, so fences and chatter never cost a
retry. On failure the agent is re-run in a **fresh** session (``no_continue=True``, no ``resume``)
with a prompt restating the task, its invalid answer, the error and the schema — at most
``retries`` times, and only while the attempt exited 0 (a crash or timeout ends the loop).

Interface for API mode: ``check_schema(schema)`` before taking the lock, then
``await run_with_json_retry(adapter, request, retries)`` → :class:`RunOutcome`
(``text``, ``json``, ``session_id``, ``exit_code``, ``attempts``, ``usage``, ``stderr``,
``parse_error``, ``reason``). ``RunOutcome.failure`` says why a run did not succeed, or None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError

from .adapters.base import TIMEOUT_EXIT_CODE, Adapter, AgentRequest, EventSink, add_usage
from .run_stats import RUN_STATS

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_EDGE_FENCE = re.compile(r"^\s*```[^\n`]*\n(.*?)\n?```\s*$", re.DOTALL)

RETRY_PROMPT = """Your previous response to the task below could not be parsed as JSON. Re-do the task \
and answer with valid JSON only.

─── Original task ───
{task}

─── Your previous (invalid) response ───
{previous}

─── Parse / validation error ───
{error}

Respond with ONLY the JSON value: no prose, no explanations, no code fences. It must validate against \
the schema below.

─── Required schema ───
{schema}"""


def check_schema(schema: Mapping[str, Any]) -> None:
    """Raise ValueError when ``schema`` is not itself a valid JSON Schema."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"json_schema is not a valid JSON Schema: {exc.message}") from None


def _describe(error: ValidationError) -> str:
    location = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"at ${location}: {error.message}" if location else error.message


def _balanced(text: str, opener: str, closer: str) -> str | None:
    """The first ``opener…closer`` span with balanced nesting (brackets inside strings ignored)."""
    start = text.find(opener)
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == opener:
                depth += 1
            elif char == closer:
                depth -= 1
                if depth == 0:
                    return text[start : index + 1]
        start = text.find(opener, start + 1)
    return None


def _candidates(text: str) -> list[str]:
    found = [text]
    edge = _EDGE_FENCE.match(text)
    if edge:
        found.append(edge.group(1))
    found.extend(reversed(_FENCE.findall(text)))
    for opener, closer in ("{}", "[]"):
        span = _balanced(text, opener, closer)
        if span is not None:
            found.append(span)
    return found


def parse_json_response(text: str, schema: Mapping[str, Any]) -> tuple[Any, str | None]:
    """``(value, None)`` for the first candidate that parses and validates, else ``(None, error)``:
    the first validation error if any candidate parsed, otherwise the first parse error."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    parse_error: str | None = None
    schema_error: str | None = None
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            parse_error = parse_error or f"not valid JSON: {exc}"
            continue
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return value, None
        schema_error = schema_error or f"does not match the schema: {_describe(error)}"
    return None, schema_error or parse_error or "empty response"


def retry_prompt(task: str, previous: str, error: str, schema: Mapping[str, Any]) -> str:
    return RETRY_PROMPT.format(task=task, previous=previous, error=error, schema=json.dumps(schema, indent=2))


@dataclass
class Attempt:
    index: int
    exit_code: int
    parse_error: str | None
    usage: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "exit_code": self.exit_code,
            "parse_error": self.parse_error,
            "usage": self.usage,
        }


@dataclass
class RunOutcome:
    text: str = ""
    #: The validated value when a schema was given and an attempt matched it.
    json: Any = None
    session_id: str = ""
    exit_code: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    #: The last attempt's parse/validation error (schema runs only).
    parse_error: str | None = None
    reason: str = "stop"

    @property
    def retries(self) -> int:
        return max(len(self.attempts) - 1, 0)

    @property
    def failure(self) -> str | None:
        """Why the run did not succeed (naming the exit code or validation error), or None."""
        if self.exit_code == TIMEOUT_EXIT_CODE and self.reason == "timeout":
            return f"agent timed out: {self.stderr.strip()}"
        if self.exit_code != 0:
            detail = self.stderr.strip()[-1000:] or "no error output"
            return f"agent exited with code {self.exit_code}: {detail}"
        if self.parse_error is not None:
            return f"json_schema validation failed after {self.retries} retries: {self.parse_error}"
        return None


async def run_with_json_retry(
    adapter: Adapter, request: AgentRequest, retries: int, on_event: EventSink | None = None
) -> RunOutcome:
    """Run ``request``; with ``request.json_schema`` validate and retry in fresh sessions.
    ``on_event`` sees every attempt's events as they come."""
    RUN_STATS.started += 1
    try:
        outcome = await _run_attempts(adapter, request, retries, on_event)
    except BaseException:  # cancelled (client gone, shutdown) or the adapter broke
        RUN_STATS.failed += 1
        raise
    if outcome.failure is None:
        RUN_STATS.finished += 1
    else:
        RUN_STATS.failed += 1
    return outcome


async def _run_attempts(
    adapter: Adapter, request: AgentRequest, retries: int, on_event: EventSink | None
) -> RunOutcome:
    outcome = RunOutcome()
    current = request
    for index in range(retries + 1):
        result = await adapter.run(current, on_event)
        add_usage(outcome.usage, result.usage)
        outcome.text, outcome.exit_code, outcome.stderr = result.text, result.exit_code, result.stderr
        outcome.session_id, outcome.reason = result.session_id or outcome.session_id, result.reason
        parse_error: str | None = None
        if request.json_schema is not None and result.exit_code == 0:
            outcome.json, parse_error = parse_json_response(result.text, request.json_schema)
        outcome.parse_error = parse_error
        outcome.attempts.append(Attempt(index, result.exit_code, parse_error, dict(result.usage)))
        if parse_error is None or result.exit_code != 0:
            break
        if index < retries:
            current = request.fresh(
                retry_prompt(request.prompt, result.text, parse_error, request.json_schema)
            )
    return outcome
