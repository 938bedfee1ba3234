"""Caller-supplied JSON Schemas (``json_schema`` of ``run_prompt`` and ``/run``, the OpenAI
endpoint's ``response_format`` and tool ``parameters``): checked before any agent starts, and
answers matched against them in a killable worker process.

:func:`check_schema` refuses, with a message naming the problem, a schema that is not a valid JSON
Schema, a ``$ref`` that does not point inside the schema itself (nothing is ever fetched: no
network, no ``file://``), and a reference cycle that never reaches a value (``{"$ref": "#"}``,
``a → b → a``), which would recurse forever. Recursive schemas that descend into the instance
(a tree whose children follow ``#``) are fine.

Both run in a worker process (:func:`check_schemas`, :func:`match_answer`). Matching an answer
(:func:`parse_json_response`: JSON candidates in the text, the first that
validates wins) can be made arbitrarily slow by the schema alone — a ``pattern`` like ``^(a+)+$``
backtracks exponentially, and Python cannot interrupt a regular expression nor kill a thread. So
:func:`match_answer` runs it in a fresh ``python -m agentbox_mcp_mode.schema_worker`` process with a
CPU limit, killed after ``time_limit`` seconds: the server's event loop never waits on it and a hostile
schema costs one bounded process, not a stuck worker thread. A validator only ever sees a
``referencing`` registry whose retrieval refuses, as a second guard.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.exceptions import SchemaError, ValidationError
from referencing._core import Resolver

#: Seconds one answer may take to be matched against its schema (``AICODEBOX_JSON_VALIDATION_TIMEOUT``).
DEFAULT_VALIDATION_TIMEOUT = 10.0
#: Deepest chain of subschemas and references :func:`check_schema` follows.
MAX_DEPTH = 200

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_EDGE_FENCE = re.compile(r"^\s*```[^\n`]*\n(.*?)\n?```\s*$", re.DOTALL)

#: Keywords whose subschemas apply to the same instance (a loop through them never ends).
_SAME_INSTANCE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies")
#: Keywords whose subschemas apply to a part of the instance (recursion through them ends).
_DESCENDING = (
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "prefixItems",
    "additionalItems",
    "unevaluatedItems",
    "contains",
)
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


class MatchAborted(ValueError):
    """Matching an answer was stopped: it took longer than allowed, or its worker died."""


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy cannot see


#: The only registry a caller's schema is used with: nothing outside the schema can be retrieved.
NO_RETRIEVAL: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    return jsonschema.validators.validator_for(schema)(schema, registry=NO_RETRIEVAL)


def _subschemas(node: Mapping[str, Any], keywords: tuple[str, ...]) -> Iterator[Any]:
    for keyword in keywords:
        value = node.get(keyword)
        if isinstance(value, list):
            yield from value
        elif isinstance(value, dict) and keyword in (
            "properties",
            "patternProperties",
            "dependentSchemas",
            "dependencies",
        ):
            yield from (item for item in value.values() if isinstance(item, (dict, bool)))
        elif isinstance(value, (dict, bool)):
            yield value


def _loops_or_escapes(schema: Mapping[str, Any], what: str) -> None:
    """Raise ValueError for a reference outside the schema or a cycle that stays on one value."""
    specification = referencing.jsonschema.specification_with(
        str(schema.get("$schema", "")), default=referencing.jsonschema.DRAFT202012
    )
    root = specification.create_resource(schema)
    visiting, done = 1, 2
    state: dict[int, int] = {}
    alive: list[Any] = []  # keeps every visited node alive, so ids stay unique
    later: list[tuple[Any, Resolver[Any]]] = [(schema, NO_RETRIEVAL.resolver_with_root(root))]

    def visit(node: Any, resolver: Resolver[Any], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ValueError(f"{what} nests subschemas or references more than {MAX_DEPTH} deep")
        if state.get(id(node)) == visiting:
            raise ValueError(f"{what} has a $ref cycle that never reaches a value (it would recurse forever)")
        if state.get(id(node)) == done or not isinstance(node, dict):
            return
        state[id(node)] = visiting
        alive.append(node)
        resolver = resolver.in_subresource(specification.create_resource(node))
        for keyword in _REFERENCES:
            reference = node.get(keyword)
            if isinstance(reference, str):
                try:
                    target = resolver.lookup(reference)
                except referencing.exceptions.Unresolvable:
                    raise ValueError(
                        f"{what} $ref {reference!r} cannot be resolved: only references inside the "
                        "schema are allowed (nothing is fetched)"
                    ) from None
                visit(target.contents, target.resolver, depth + 1)
        for child in _subschemas(node, _SAME_INSTANCE):
            visit(child, resolver, depth + 1)
        later.extend((child, resolver) for child in _subschemas(node, _DESCENDING))
        state[id(node)] = done

    while later:
        node, resolver = later.pop()
        visit(node, resolver, 0)


def check_schema(schema: Mapping[str, Any], what: str = "json_schema") -> None:
    """Raise ValueError when ``schema`` is not a valid JSON Schema or would fetch or loop."""
    try:
        jsonschema.validators.validator_for(schema).check_schema(dict(schema))
    except SchemaError as exc:
        raise ValueError(f"{what} is not a valid JSON Schema: {exc.message}") from None
    except RecursionError:
        raise ValueError(f"{what} nests too deeply") from None
    _loops_or_escapes(schema, what)


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
    the first validation error if any candidate parsed, otherwise the first parse error. Runs in
    the caller's thread without a time bound: servers use :func:`match_answer`."""
    checker = validator(schema)
    parse_error: str | None = None
    schema_error: str | None = None
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except ValueError as exc:
            parse_error = parse_error or f"not valid JSON: {exc}"
            continue
        error = jsonschema.exceptions.best_match(checker.iter_errors(value))
        if error is None:
            return value, None
        schema_error = schema_error or f"does not match the schema: {_describe(error)}"
    return None, schema_error or parse_error or "empty response"


async def _in_worker(request: dict[str, Any], time_limit: float, doing: str) -> dict[str, Any]:
    """``request`` answered by a fresh ``schema_worker`` process, killed after ``time_limit``
    seconds (:class:`MatchAborted` naming what it was ``doing``); the event loop only waits on pipes."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-m",
        "agentbox_mcp_mode.schema_worker",
        str(time_limit),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={},  # it needs nothing from the server's environment, least of all its tokens
    )
    try:
        output, errors = await asyncio.wait_for(process.communicate(json.dumps(request).encode()), time_limit)
    except TimeoutError:
        raise MatchAborted(f"{doing} took over {time_limit:g} s") from None
    finally:
        if process.returncode is None:  # timed out or cancelled: never leave the worker running
            process.kill()
            await process.wait()
    if process.returncode != 0:
        detail = errors.decode(errors="replace").strip().splitlines()[-1:] or ["no error output"]
        raise MatchAborted(f"{doing} failed: {detail[0]}")
    answer: dict[str, Any] = json.loads(output)
    return answer


async def check_schemas(
    schemas: Sequence[tuple[str, Mapping[str, Any]]], time_limit: float = DEFAULT_VALIDATION_TIMEOUT
) -> None:
    """:func:`check_schema` for each ``(what, schema)`` in one worker process with a time bound:
    ValueError naming the first problem (a big schema takes the worker's time, not the loop's)."""
    answer = await _in_worker({"check": list(schemas)}, time_limit, "checking the schema")
    if answer["error"] is not None:
        raise ValueError(answer["error"])


async def match_answer(
    text: str, schema: Mapping[str, Any], time_limit: float = DEFAULT_VALIDATION_TIMEOUT
) -> tuple[Any, str | None]:
    """:func:`parse_json_response` in a worker process with a time bound (:class:`MatchAborted`)."""
    answer = await _in_worker({"text": text, "schema": schema}, time_limit, "matching the answer against the schema")
    return answer["value"], answer["error"]
