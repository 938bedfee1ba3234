"""The document says what the routes accept: inputs valid by ``/v1/openapi.json`` are not refused as bad
requests, the strings a plane refuses are outside the document's schema, and every error of every path
(the files under ``/static`` too, any method) is answered in the envelope. These pin what schemathesis'
positive-data checks found (``positive_data_acceptance``: 58 valid inputs answered 400/422, and a plain
text 404/405 from the static files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.gateway.doors.rest.test_rest_contract import pointer
from tests.support import shared_http

#: Stands for the test's tmp_path in a body or a query.
HERE = "{here}"

#: (method, path template, request path, body or query): valid by the document, each with an integral
#: number (``240.0``) where the schema says ``integer``; none may be refused as a bad request.
VALID_INPUTS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("POST", "/v1/shell/exec", "/v1/shell/exec", {"command": "true", "no_change_timeout": 240.0}),
    ("POST", "/v1/shell/wait", "/v1/shell/wait", {"id": "conformance-none", "seconds": 1.0}),
    (
        "POST",
        "/v1/shell/sessions/update",
        "/v1/shell/sessions/update",
        {"id": "conformance-none", "no_change_timeout": 5.0},
    ),
    ("POST", "/v1/bash/output", "/v1/bash/output", {"session_id": "conformance-none", "stderr_offset": 0.0}),
    ("POST", "/v1/bash/exec", "/v1/bash/exec", {"command": "true", "max_output_length": 100.0}),
    ("POST", "/v1/file/glob", "/v1/file/glob", {"path": HERE, "pattern": "*", "max_results": 10.0}),
    ("POST", "/v1/file/grep", "/v1/file/grep", {"path": HERE, "pattern": "x", "offset": 0.0}),
    ("POST", "/v1/file/list", "/v1/file/list", {"path": HERE, "max_depth": 1.0}),
    ("POST", "/v1/file/watch/wait", "/v1/file/watch/wait", {"path": f"{HERE}/none", "timeout": 1.0}),
    (
        "POST",
        "/v1/file/watch/{watcher_id}/poll",
        "/v1/file/watch/conformance-none/poll",
        {"since": 0.0, "limit": 10.0, "timeout": 0.0},
    ),
]

#: (method, path template, where, value): strings the planes refuse (400), each outside the document's
#: schema now; ``where`` is a body field (``body.x``), a query or a path parameter (``query.x``, ``path.x``).
REFUSED_STRINGS: list[tuple[str, str, str, str, Any]] = [
    ("POST", "/v1/shell/sessions/create", "/v1/shell/sessions/create", "body.id", ""),
    ("POST", "/v1/bash/sessions/create", "/v1/bash/sessions/create", "body.session_id", "a b"),
    ("POST", "/v1/code/execute", "/v1/code/execute", "body.session_id", "[x]"),
    ("POST", "/v1/jupyter/sessions/create", "/v1/jupyter/sessions/create", "body.session_id", "-x"),
    ("POST", "/v1/nodejs/sessions", "/v1/nodejs/sessions", "body.session_id", "x/y"),
    ("POST", "/v1/bash/exec", "/v1/bash/exec", "body.env", {"x-y": ""}),
    ("POST", "/v1/sandbox/hooks", "/v1/sandbox/hooks", "body.name", ",ce"),
    ("POST", "/v1/file/watch", "/v1/file/watch", "body.path", "0"),
    ("POST", "/v1/file/watch/wait", "/v1/file/watch/wait", "body.path", "relative"),
    ("GET", "/v1/file/download", "/v1/file/download", "query.path", ""),
    ("GET", "/v1/skills/{name}/content", "/v1/skills/%C2%85e/content", "path.name", "\x85e"),
    ("DELETE", "/v1/skills/{name}", "/v1/skills/.hidden", "path.name", ".hidden"),
    ("POST", "/v1/sandbox/hooks", "/v1/sandbox/hooks", "body.event", "startup"),
    ("POST", "/v1/code/execute", "/v1/code/execute", "body.timeout", 0),
    ("PUT", "/v1/proxy/upstream", "/v1/proxy/upstream", "body.server", "0"),
    ("POST", "/v1/proxy/mappings", "/v1/proxy/mappings", "body.target", "0" * 300),
    ("POST", "/v1/proxy/excludes", "/v1/proxy/excludes", "body.pattern", "\u00c4!9E"),
    ("GET", "/v1/proxy/diagnose", "/v1/proxy/diagnose", "query.url", "0" * 30),
    ("POST", "/v1/util/convert_to_markdown", "/v1/util/convert_to_markdown", "body.uri", "\n\u00dfN"),
]

#: The body each refused string is sent in (the operation's other required fields).
BASES: dict[str, dict[str, Any]] = {
    "/v1/code/execute": {"code": "1"},
    "/v1/bash/exec": {"command": "true"},
    "/v1/sandbox/hooks": {"command": "true", "name": "conformance-refused"},
    "/v1/proxy/mappings": {"source": "conformance.example"},
    "/v1/file/watch/wait": {"timeout": 1},
}


@pytest.fixture(scope="module")
def gateway(module_gateway: str) -> str:
    """One gateway for the module: its requests create nothing another test could see."""
    return module_gateway


@pytest.fixture(scope="module")
def document(gateway: str) -> dict[str, Any]:
    return shared_http.get(f"{gateway}/v1/openapi.json", timeout=10).json()


def schema_errors(document: dict[str, Any], schema_pointer: str, value: Any) -> list[str]:
    """What ``value`` breaks of the schema at ``schema_pointer`` (the whole document as root)."""
    return [error.message for error in Draft202012Validator({**document, "$ref": schema_pointer}).iter_errors(value)]


def body_pointer(method: str, template: str) -> str:
    return pointer("paths", template, method.lower(), "requestBody", "content", "application/json", "schema")


def parameter_pointer(document: dict[str, Any], method: str, template: str, kind: str, name: str) -> str:
    parameters = document["paths"][template][method.lower()]["parameters"]
    index = next(i for i, p in enumerate(parameters) if p["in"] == kind and p["name"] == name)
    return pointer("paths", template, method.lower(), "parameters", str(index), "schema")


def filled(value: Any, here: Path) -> Any:
    if isinstance(value, dict):
        return {key: filled(item, here) for key, item in value.items()}
    return value.replace(HERE, str(here)) if isinstance(value, str) else value


@pytest.mark.parametrize(
    ("method", "template", "path", "body"),
    VALID_INPUTS,
    ids=[f"{t}:{','.join(k for k, v in b.items() if isinstance(v, float))}" for _, t, _, b in VALID_INPUTS],
)
def test_inputs_valid_by_the_document_are_not_refused(
    gateway: str, document: dict[str, Any], tmp_path: Path, method: str, template: str, path: str, body: dict[str, Any]
) -> None:
    body = filled(body, tmp_path)
    assert schema_errors(document, body_pointer(method, template), body) == []
    response = shared_http.request(method, f"{gateway}{path}", json=body, timeout=30)
    assert response.status_code not in (400, 422), f"{method} {path} {body}: {response.text[:300]}"


@pytest.mark.parametrize(
    ("method", "template", "path", "where", "value"),
    REFUSED_STRINGS,
    ids=[f"{t}:{w}" for _, t, _, w, _ in REFUSED_STRINGS],
)
def test_strings_the_planes_refuse_are_outside_the_document(
    gateway: str, document: dict[str, Any], method: str, template: str, path: str, where: str, value: Any
) -> None:
    kind, name = where.split(".")
    if kind == "body":
        body = {**BASES.get(template, {}), name: value}
        assert schema_errors(document, body_pointer(method, template), body), f"{body} is valid by the document"
        response = shared_http.request(method, f"{gateway}{path}", json=body, timeout=30)
    else:
        schema = parameter_pointer(document, method, template, kind, name)
        assert schema_errors(document, schema, value), f"{name}={value!r} is valid by the document"
        params = {name: value} if kind == "query" else None
        response = shared_http.request(method, f"{gateway}{path}", params=params, timeout=30)
    # The plane's refusal still protects: the document only stopped promising the string would do.
    assert response.status_code == 400, f"{method} {path}: {response.status_code} {response.text[:300]}"
    assert response.json()["success"] is False


#: (method, path): errors from outside the REST door and from it, on known and unknown paths.
ERRORS = [
    ("GET", "/static/nothing.js"),
    ("GET", "/static/"),
    ("PATCH", "/static/dashboard.js"),
    ("POST", "/static/dashboard.js"),
    ("DELETE", "/static/nothing.js"),
    ("PATCH", "/health"),
    ("PATCH", "/"),
    ("PATCH", "/v1/shell/exec"),
    ("PATCH", "/v1/nothing"),
    ("PUT", "/nothing"),
    ("TRACE", "/v1/openapi.json"),
]


@pytest.mark.parametrize(("method", "path"), ERRORS, ids=[f"{m} {p}" for m, p in ERRORS])
def test_every_error_is_answered_in_the_envelope(gateway: str, method: str, path: str) -> None:
    response = shared_http.request(method, f"{gateway}{path}", timeout=10)
    assert response.status_code in (404, 405), f"{method} {path}: {response.status_code}"
    assert response.headers["content-type"].startswith("application/json"), response.text[:200]
    answer = response.json()
    assert set(answer) >= {"success", "message", "data", "hint"} and answer["success"] is False, answer
    if response.status_code == 405:
        assert response.headers.get("allow"), f"{method} {path}: a 405 without Allow"
