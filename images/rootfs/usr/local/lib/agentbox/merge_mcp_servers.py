"""Prints EXTRA_MCP_SERVERS with the image's own upstreams merged in: the image's entries come first (so
their tools follow the built-ins in tools/list) and the user's entries win on a name clash.

Usage: merge_mcp_servers.py IMAGE_JSON [USER_JSON]. A USER_JSON that is not a JSON object is printed back
unchanged (with a warning on stderr), so the gateway rejects it with its own message naming the variable.
"""

from __future__ import annotations

import json
import sys


def merge(image: dict, user_text: str) -> str:
    if not user_text.strip():
        return json.dumps(image, separators=(",", ":"))
    try:
        user = json.loads(user_text)
    except json.JSONDecodeError as exc:
        print(f"agentbox-entrypoint: EXTRA_MCP_SERVERS is not valid JSON ({exc}); passed on as is", file=sys.stderr)
        return user_text
    if not isinstance(user, dict):
        print("agentbox-entrypoint: EXTRA_MCP_SERVERS is not a JSON object; passed on as is", file=sys.stderr)
        return user_text
    merged = dict(image)
    merged.update(user)
    return json.dumps(merged, separators=(",", ":"))


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    image = json.loads(argv[1])
    print(merge(image, argv[2] if len(argv) == 3 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
