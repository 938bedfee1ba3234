"""The worker :func:`agentbox_mcp_mode.schemas.match_answer` starts for one answer: reads
``{"text", "schema"}`` on stdin, writes ``{"value", "error"}`` on stdout. Its CPU time is capped
(``argv[1]`` seconds, plus one) so it ends even if its parent could not kill it."""

from __future__ import annotations

import json
import math
import resource
import sys

from .schemas import parse_json_response


def main() -> None:
    seconds = math.ceil(float(sys.argv[1])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    request = json.load(sys.stdin)
    value, error = parse_json_response(request["text"], request["schema"])
    json.dump({"value": value, "error": error}, sys.stdout)


if __name__ == "__main__":
    main()
