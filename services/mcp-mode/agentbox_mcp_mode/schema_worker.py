"""The worker :mod:`agentbox_mcp_mode.schemas` starts for one job, read as JSON on stdin:
``{"check": [[what, schema], ...]}`` → ``{"error"}`` (the first problem, or null), or
``{"text", "schema"}`` → ``{"value", "error"}`` (the matched answer), written on stdout. Its CPU time is capped
(``argv[1]`` seconds, plus one) so it ends even if its parent could not kill it."""

from __future__ import annotations

import json
import math
import resource
import sys
from typing import Any

from .schemas import check_schema, parse_json_response


def main() -> None:
    seconds = math.ceil(float(sys.argv[1])) + 1
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard)  # an unprivileged process cannot raise its hard limit
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    request = json.load(sys.stdin)
    if "check" in request:
        json.dump({"error": first_problem(request["check"])}, sys.stdout)
        return
    value, error = parse_json_response(request["text"], request["schema"])
    json.dump({"value": value, "error": error}, sys.stdout)


def first_problem(schemas: list[list[Any]]) -> str | None:
    for what, schema in schemas:
        try:
            check_schema(schema, what)
        except ValueError as exc:
            return str(exc)
    return None


if __name__ == "__main__":
    main()
