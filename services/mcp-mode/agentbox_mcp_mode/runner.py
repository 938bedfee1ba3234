"""One agent run as a surface sees it: the adapter run plus, with a ``json_schema``, parsing,
validation and fresh-session retries (aicodebox's ``run_with_json_retry``).

Parsing tolerates what models wrap around JSON: candidates are the raw text, the text with edge
code fences stripped, each fenced block (last first), then the first brace-balanced ``{…}`` and the
first ``[…]``; the first that parses *and* validates wins, so fences and chatter never cost a
retry. Matching runs in a worker process with a time bound (:mod:`.schemas`); a match that is
stopped ends the run without retries (the schema, not the answer, is at fault). On failure the
agent is re-run in a **fresh** session (``no_continue=True``, no ``resume``)
with a prompt restating the task, its invalid answer, the error and the schema — at most
``retries`` times, and only while the attempt exited 0 (a crash or timeout ends the loop).

Used by the run service (:mod:`.run_service`, every surface's one path): ``check_request(settings,
adapter, request)`` before taking the lock, then
``await run_with_json_retry(adapter, request, retries, validation_timeout)`` → :class:`RunOutcome`
(``text``, ``json``, ``session_id``, ``exit_code``, ``attempts``, ``usage``, ``stderr``,
``parse_error``, ``reason``). ``RunOutcome.failure`` says why a run did not succeed, or None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .adapters.base import TIMEOUT_EXIT_CODE, Adapter, AgentRequest, EventSink, add_usage
from .run_stats import RUN_STATS
from .schemas import DEFAULT_VALIDATION_TIMEOUT, MatchAborted, check_schemas, match_answer
from .settings import McpModeSettings

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


async def check_request(
    settings: McpModeSettings,
    adapter: Adapter,
    request: AgentRequest,
    schemas: Sequence[tuple[str, Mapping[str, Any]]] | None = None,
) -> None:
    """Everything that can refuse a run, before a workspace is created or an agent started: the
    model, the caller's schemas (``schemas``, by default the request's ``json_schema``; checked in
    a worker process, see :func:`.schemas.check_schemas`) and what the adapter supports. Raises
    ValueError or AgentRequestError naming the problem."""
    settings.check_model(request.model)
    if schemas is None:
        schemas = [] if request.json_schema is None else [("json_schema", request.json_schema)]
    if schemas:
        await check_schemas(schemas, settings.validation_timeout)
    adapter.validate(request)


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
    adapter: Adapter,
    request: AgentRequest,
    retries: int,
    validation_timeout: float = DEFAULT_VALIDATION_TIMEOUT,
    on_event: EventSink | None = None,
) -> RunOutcome:
    """Run ``request``; with ``request.json_schema`` validate and retry in fresh sessions.
    ``on_event`` sees every attempt's events as they come."""
    RUN_STATS.started += 1
    try:
        outcome = await _run_attempts(adapter, request, retries, validation_timeout, on_event)
    except BaseException:  # cancelled (client gone, shutdown) or the adapter broke
        RUN_STATS.failed += 1
        raise
    if outcome.failure is None:
        RUN_STATS.finished += 1
    else:
        RUN_STATS.failed += 1
    return outcome


async def _run_attempts(
    adapter: Adapter, request: AgentRequest, retries: int, validation_timeout: float, on_event: EventSink | None
) -> RunOutcome:
    outcome = RunOutcome()
    current, schema = request, request.json_schema
    for index in range(retries + 1):
        result = await adapter.run(current, on_event)
        add_usage(outcome.usage, result.usage)
        outcome.text, outcome.exit_code, outcome.stderr = result.text, result.exit_code, result.stderr
        outcome.session_id, outcome.reason = result.session_id or outcome.session_id, result.reason
        parse_error: str | None = None
        aborted = False
        if schema is not None and result.exit_code == 0:
            try:
                outcome.json, parse_error = await match_answer(result.text, schema, validation_timeout)
            except MatchAborted as exc:
                parse_error, aborted = str(exc), True
        outcome.parse_error = parse_error
        outcome.attempts.append(Attempt(index, result.exit_code, parse_error, dict(result.usage)))
        if parse_error is None or result.exit_code != 0 or aborted:
            break
        if index < retries and schema is not None:
            current = request.fresh(retry_prompt(request.prompt, result.text, parse_error, schema))
    return outcome
