"""``EXTRA_MCP_SERVERS`` / ``--mcp-servers``: which entries are aggregated, which are skipped (one
warning each, naming the entry and the reason), and invalid JSON stopping ``aiod`` with a message."""

from __future__ import annotations

import logging
import os
import subprocess
from typing import Any

import pytest

from agentbox_gateway.upstreams.config import UpstreamConfig, parse_upstreams
from tests.support.servers import console_script, free_port

CONFIG_LOG = "agentbox_gateway.upstreams.config"


def skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == CONFIG_LOG and r.levelno == logging.WARNING]


def test_valid_entries_load_in_registration_order(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=CONFIG_LOG)
    raw = {
        "peer": {"url": "http://127.0.0.1:18091/mcp", "prefix": "peer"},
        "browser": {"url": "http://localhost:8100/mcp"},
        "v6": {"url": "http://[::1]:9000/mcp", "prefix": "six", "headers": {"Authorization": "Bearer t"}},
        "empty_prefix": {"url": "http://127.0.0.1/", "prefix": "", "transport": "streamable-http"},
    }
    configs = parse_upstreams(raw)
    assert [c.name for c in configs] == ["peer", "browser", "v6", "empty_prefix"]
    assert configs[0] == UpstreamConfig("peer", "http://127.0.0.1:18091/mcp", "peer", {})
    assert configs[1].prefix is None and configs[3].prefix is None
    assert configs[2].headers == {"Authorization": "Bearer t"}
    assert skipped(caplog) == []


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"url": "http://example.com/mcp"}, "remote host 'example.com' is not allowed"),
        ({"url": "http://10.0.0.5:8100/mcp"}, "remote host '10.0.0.5' is not allowed"),
        ({"url": "http://127.0.0.1.nip.io/mcp"}, "remote host '127.0.0.1.nip.io' is not allowed"),
        ({"url": "https://127.0.0.1:8443/mcp"}, "https upstreams are not supported"),
        ({"command": "npx", "args": ["-y", "some-mcp"]}, '"command" (stdio) servers are not supported'),
        ({"url": "ftp://127.0.0.1/mcp"}, "URL scheme 'ftp' is not supported"),
        ({"url": "127.0.0.1:8100/mcp"}, "URL scheme"),
        ({"url": "http://user:pw@127.0.0.1/mcp"}, "credentials in the URL are not allowed"),
        ({"url": "http://127.0.0.1:99999/mcp"}, '"url" is not a valid URL'),
        ({"url": ""}, '"url" must be a non-empty string'),
        ({"url": 8100}, '"url" must be a non-empty string'),
        ({"prefix": "x"}, '"url" is missing'),
        ("http://127.0.0.1/mcp", "the entry must be an object, got str"),
        ({"url": "http://127.0.0.1/mcp", "prefix": "has space"}, '"prefix" must be a string of letters'),
        ({"url": "http://127.0.0.1/mcp", "prefix": 3}, '"prefix" must be a string of letters'),
        ({"url": "http://127.0.0.1/mcp", "headers": ["a"]}, '"headers" must be an object'),
        ({"url": "http://127.0.0.1/mcp", "headers": {"X-A": 1}}, '"headers" value for X-A must be'),
        ({"url": "http://127.0.0.1/mcp", "headers": {"X-A": "a\r\nX-B: b"}}, '"headers" value for X-A must be'),
        ({"url": "http://127.0.0.1/mcp", "headers": {"Bad Name": "v"}}, '"headers" has an invalid header name'),
    ],
)
def test_unusable_entries_are_skipped_with_one_warning(
    caplog: pytest.LogCaptureFixture, entry: Any, reason: str
) -> None:
    caplog.set_level(logging.WARNING, logger=CONFIG_LOG)
    configs = parse_upstreams({"good": {"url": "http://127.0.0.1:1/mcp"}, "bad": entry})
    assert [c.name for c in configs] == ["good"]
    (warning,) = skipped(caplog)
    assert "'bad'" in warning and reason in warning, warning


def test_header_values_never_reach_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    parse_upstreams(
        {
            "a": {"url": "http://example.com/", "headers": {"Authorization": "Bearer s3cret"}},
            "b": {"url": "http://127.0.0.1/", "headers": {"X-Token": ["s3cret"]}},
        }
    )
    assert len(skipped(caplog)) == 2
    assert "s3cret" not in caplog.text


def test_an_entry_name_that_cannot_be_part_of_a_tool_name_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=CONFIG_LOG)
    assert parse_upstreams({"my server": {"url": "http://127.0.0.1/mcp"}}) == []
    assert "'my server'" in skipped(caplog)[0]


def test_published_names_and_their_way_back() -> None:
    prefixed = UpstreamConfig("peer", "http://127.0.0.1/mcp", prefix="p")
    assert prefixed.publish("sandbox_execute_bash") == "p_sandbox_execute_bash"
    assert prefixed.original("p_sandbox_execute_bash") == "sandbox_execute_bash"
    assert prefixed.original("peer_x") is None and prefixed.original("p_") is None
    bare = UpstreamConfig("browser", "http://127.0.0.1/mcp")
    assert bare.publish("browser_navigate") == "browser_navigate"
    assert bare.publish("navigate") is None and bare.publish("browser_") is None
    assert bare.original("browser_navigate") == "browser_navigate" and bare.original("browser") is None


def _aiod_start(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [console_script("aiod"), "start", "--port", str(free_port()), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_aiod_refuses_invalid_json_in_the_flag() -> None:
    done = _aiod_start(["--mcp-servers", "{bad"], {})
    assert done.returncode != 0
    assert "--mcp-servers" in done.stderr and "JSON" in done.stderr, done.stderr


@pytest.mark.parametrize("value", ["{bad", "[1, 2]"])
def test_aiod_refuses_invalid_json_in_the_environment(value: str) -> None:
    done = _aiod_start([], {"EXTRA_MCP_SERVERS": value})
    assert done.returncode != 0
    assert "EXTRA_MCP_SERVERS" in done.stderr, done.stderr
