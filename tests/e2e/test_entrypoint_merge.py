"""The entrypoint's EXTRA_MCP_SERVERS merge (images/rootfs/usr/local/lib/agentbox/merge_mcp_servers.py),
run with this machine's Python exactly as the entrypoint runs it: no container needed."""

from __future__ import annotations

import json
import subprocess
import sys

from .dockerbox import REPO

SCRIPT = REPO / "images/rootfs/usr/local/lib/agentbox/merge_mcp_servers.py"
BROWSER = '{"browser":{"url":"http://127.0.0.1:8100/mcp"}}'


def merge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=30)


def test_image_entries_alone_when_the_user_sets_none() -> None:
    for user in ([], [""], ["  "]):
        result = merge(BROWSER, *user)
        assert result.returncode == 0
        assert json.loads(result.stdout) == {"browser": {"url": "http://127.0.0.1:8100/mcp"}}


def test_user_entries_are_added_after_the_image_ones() -> None:
    user = '{"peer":{"url":"http://127.0.0.1:18091/mcp","prefix":"peer"}}'
    merged = json.loads(merge(BROWSER, user).stdout)
    assert list(merged) == ["browser", "peer"]
    assert merged["peer"] == {"url": "http://127.0.0.1:18091/mcp", "prefix": "peer"}


def test_the_user_entry_wins_a_name_clash_and_keeps_the_position() -> None:
    user = '{"other":{"url":"http://127.0.0.1:9/mcp"},"browser":{"url":"http://127.0.0.1:9100/mcp","prefix":"b"}}'
    merged = json.loads(merge(BROWSER, user).stdout)
    assert list(merged) == ["browser", "other"]
    assert merged["browser"] == {"url": "http://127.0.0.1:9100/mcp", "prefix": "b"}


def test_invalid_user_json_is_passed_on_unchanged_with_a_warning() -> None:
    for bad in ('{"browser": ', '["not", "an", "object"]'):
        result = merge(BROWSER, bad)
        assert result.returncode == 0
        assert result.stdout.strip() == bad.strip()
        assert "EXTRA_MCP_SERVERS" in result.stderr
