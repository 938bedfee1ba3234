"""The REST door keeps the contract ``/v1/openapi.json`` publishes: bodies that violate the schema are
refused (no bool/int/str coercion), every error status a route answers is documented with the body it
really has, and a 405 names every method the path serves. The fuzzed version of these checks runs
against the image in tests/e2e/test_image_rest_fuzz.py; these pin the cases it found."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.support import shared_http
from tests.support.servers import serve_app

#: Stands for a path under the test's tmp_path that does not exist (a lax server would write it).
MISSING = "{missing}"
#: (route, body, field): each body breaks its schema in ``field`` only, with a value a lax parser coerces.
SCHEMA_VIOLATIONS = [
    ("/v1/shell/exec", {"command": "true", "async_mode": 1}, "async_mode"),
    ("/v1/shell/exec", {"command": "true", "truncate": 0}, "truncate"),
    ("/v1/shell/exec", {"command": "true", "timeout": True}, "timeout"),
    ("/v1/shell/sessions/create", {"preserve_symlinks": 0}, "preserve_symlinks"),
    ("/v1/shell/wait", {"id": "none", "seconds": "5"}, "seconds"),
    ("/v1/bash/exec", {"command": "true", "max_output_length": True}, "max_output_length"),
    ("/v1/code/execute", {"code": "1", "stateful": 1}, "stateful"),
    ("/v1/nodejs/execute", {"code": "1", "stateful": 0}, "stateful"),
    ("/v1/file/read", {"file": MISSING, "sudo": 0}, "sudo"),
    ("/v1/file/write", {"file": MISSING, "content": "x", "append": 1}, "append"),
    ("/v1/file/list", {"path": MISSING, "sort_desc": 1}, "sort_desc"),
    ("/v1/file/grep", {"path": MISSING, "pattern": "x", "recursive": 0}, "recursive"),
    (
        "/v1/file/str_replace_editor",
        {"command": "view", "path": MISSING, "view_range": [True, 2]},
        "view_range",
    ),
    ("/v1/browser/config", {"resolution": {"width": "1280", "height": 720}}, "resolution"),
]


@pytest.fixture(scope="module")
def gateway(module_gateway: str) -> str:
    """One gateway for the module: its tests are refusals that change nothing, and a session of its own
    (``contract-taken``) that no other test names."""
    return module_gateway


@pytest.fixture(scope="module")
def document(gateway: str) -> dict[str, Any]:
    return shared_http.get(f"{gateway}/v1/openapi.json", timeout=10).json()


def pointer(*parts: str) -> str:
    return "#/" + "/".join(part.replace("~", "~0").replace("/", "~1") for part in parts)


def assert_documented(document: dict[str, Any], method: str, path: str, response: httpx.Response) -> None:
    """``response``'s status is listed for the operation and its body matches the listed schema."""
    responses = document["paths"][path][method.lower()]["responses"]
    status = str(response.status_code)
    assert status in responses, f"{method} {path} answered {status}; documented: {sorted(responses)}"
    # The whole document as the root, so the schema's "#/components/..." references resolve.
    schema = {
        **document,
        "$ref": pointer("paths", path, method.lower(), "responses", status, "content", "application/json", "schema"),
    }
    error = next(Draft202012Validator(schema).iter_errors(response.json()), None)
    assert error is None, f"{method} {path} {status}: the body does not match the document: {error}"


@pytest.mark.parametrize(
    ("route", "body", "field"), SCHEMA_VIOLATIONS, ids=[f"{r}:{f}" for r, _, f in SCHEMA_VIOLATIONS]
)
def test_schema_violating_bodies_are_refused(
    gateway: str, tmp_path: Path, route: str, body: dict[str, Any], field: str
) -> None:
    missing = str(tmp_path / "missing")
    body = {key: missing if value == MISSING else value for key, value in body.items()}
    response = shared_http.post(f"{gateway}{route}", json=body, timeout=30)
    assert response.status_code == 422, f"{route} accepted {body}: {response.text[:300]}"
    answer = response.json()
    assert answer["success"] is False
    assert any(error["location"][:2] == ["body", field] for error in answer["errors"]), answer["errors"]
    assert not (tmp_path / "missing").exists()


def test_every_error_status_is_documented_with_its_body(gateway: str, document: dict[str, Any], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    with httpx.Client(base_url=gateway, timeout=30) as client:
        assert client.post("/v1/shell/sessions/create", json={"id": "contract-taken"}).status_code == 200
        answers = [
            (
                "POST",
                "/v1/shell/exec",
                client.post("/v1/shell/exec", content=b"\xfe{", headers={"Content-Type": "application/json"}),
            ),
            ("POST", "/v1/shell/view", client.post("/v1/shell/view", json={"id": "contract-unknown"})),
            (
                "POST",
                "/v1/shell/sessions/create",
                client.post("/v1/shell/sessions/create", json={"id": "contract-taken"}),
            ),
            (
                "POST",
                "/v1/shell/exec",
                client.post(
                    "/v1/shell/exec",
                    json={
                        "command": "true",
                        "id": "contract-taken",
                        "exec_dir": missing,
                        "strict": True,
                    },
                ),
            ),
            ("DELETE", "/v1/shell/sessions/{session_id}", client.delete("/v1/shell/sessions/contract-unknown")),
            ("POST", "/v1/bash/output", client.post("/v1/bash/output", json={"session_id": "contract-unknown"})),
            ("POST", "/v1/bash/sessions/{session_id}/close", client.post("/v1/bash/sessions/contract-unknown/close")),
            ("POST", "/v1/code/execute", client.post("/v1/code/execute", json={"code": "1", "language": "cobol"})),
            ("GET", "/v1/nodejs/sessions/{session_id}", client.get("/v1/nodejs/sessions/contract-unknown")),
            ("DELETE", "/v1/jupyter/sessions/{session_id}", client.delete("/v1/jupyter/sessions/contract-unknown")),
            ("POST", "/v1/jupyter/execute", client.post("/v1/jupyter/execute", json={"code": "1", "kernel_name": "x"})),
            ("GET", "/v1/file/download", client.get("/v1/file/download", params={"path": "relative/path"})),
            ("GET", "/v1/file/download", client.get("/v1/file/download", params={"path": missing})),
            (
                "POST",
                "/v1/file/read",
                client.post("/v1/file/read", content=b"{", headers={"Content-Type": "application/json"}),
            ),
            (
                "POST",
                "/v1/browser/config",
                client.post("/v1/browser/config", content=b"\xff", headers={"Content-Type": "application/json"}),
            ),
        ]
    statuses = set()
    for method, path, response in answers:
        assert response.status_code >= 400, f"{method} {path}: {response.status_code} {response.text[:200]}"
        statuses.add(response.status_code)
        assert_documented(document, method, path, response)
    assert statuses == {400, 404, 409, 422}


def test_the_guards_answers_are_documented_on_every_operation(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, api_key="contract-key"))) as url:
        document = shared_http.get(f"{url}/v1/openapi.json", timeout=10).json()
        refused = shared_http.post(f"{url}/v1/shell/exec", json={"command": "true"}, timeout=10)
    assert refused.status_code == 401
    assert_documented(document, "POST", "/v1/shell/exec", refused)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert {"401", "403", "421"} <= set(operation["responses"]), f"{method} {path}"


#: (request path, its template in the document): paths several routes serve, and literal paths that a
#: templated route also matches (``create`` could be a session id).
PATHS = [
    ("/v1/shell/sessions", "/v1/shell/sessions"),
    ("/v1/jupyter/sessions", "/v1/jupyter/sessions"),
    ("/v1/nodejs/sessions", "/v1/nodejs/sessions"),
    ("/v1/jupyter/sessions/some-id", "/v1/jupyter/sessions/{session_id}"),
    ("/v1/shell/sessions/create", "/v1/shell/sessions/create"),
    ("/v1/shell/sessions/stats", "/v1/shell/sessions/stats"),
]


@pytest.mark.parametrize(("path", "template"), PATHS, ids=[path for path, _ in PATHS])
@pytest.mark.parametrize("method", ["PATCH", "OPTIONS"])
def test_method_not_allowed_names_the_methods_of_the_path(
    gateway: str, document: dict[str, Any], path: str, template: str, method: str
) -> None:
    served = {verb.upper() for verb in document["paths"][template]}
    response = shared_http.request(method, f"{gateway}{path}", timeout=10)
    assert response.status_code == 405
    allowed = {verb.strip() for verb in response.headers["allow"].split(",")}
    assert allowed == served, f"Allow: {response.headers['allow']}; the document has {served}"
    assert response.json()["success"] is False


def test_numbers_beyond_the_documented_range_are_refused(gateway: str, document: dict[str, Any]) -> None:
    """A huge idle time once answered 500 (its milliseconds overflowed) and broke the session list."""
    with httpx.Client(base_url=gateway, timeout=30) as client:
        huge = client.post("/v1/nodejs/sessions", json={"max_idle_time": 1.7976931348623157e308})
        assert huge.status_code == 422, huge.text[:300]
        for body in (b'{"command": "true", "timeout": Infinity}', b'{"command": "true", "hard_timeout": NaN}'):
            answer = client.post("/v1/shell/exec", content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 422, f"{body!r}: {answer.text[:300]}"
        assert client.get("/v1/nodejs/sessions").status_code == 200
    bound = document["components"]["schemas"]["NodeJsCreateSessionRequest"]["properties"]["max_idle_time"]
    assert "maximum" in str(bound)


#: The README's public routes (AIO's): the only ones a caller without the key gets answers from.
ANYONE_MAY_CALL = {"/health", "/v1/ping", "/v1/openapi.json"}


def test_every_documented_operation_refuses_a_caller_without_the_key(gateway_settings: GatewaySettings) -> None:
    """No route escapes the key check, however new: each operation in the document, called without the
    key (path parameters filled in), answers 401 unless it is one of the public paths."""
    with serve_app(build_app(replace(gateway_settings, api_key="contract-key"))) as url:
        document = shared_http.get(f"{url}/v1/openapi.json", timeout=10).json()
        checked = 0
        for template, operations in document["paths"].items():
            path = template.replace("{", "").replace("}", "")  # e.g. /v1/shell/sessions/session_id
            if path in ANYONE_MAY_CALL:
                continue
            for method in operations:
                answer = shared_http.request(method.upper(), url + path, json={}, timeout=10)
                assert answer.status_code == 401, f"{method} {template}: {answer.status_code}"
                checked += 1
    assert checked > 100  # the whole surface, not a handful
