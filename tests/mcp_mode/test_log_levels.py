"""The level of ``notifications/message`` is each client's own (issue 28): with two official SDK
clients on one MCP-mode server, the one that asked for debug gets the agent's events (its stderr
included) and the one that never asked gets none, in both protocol eras; a ``logging/setLevel``
sent outside a session changes nothing for anyone."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from .helpers import mcp_client, mcp_post, serve_settings, sse_json

pytestmark = pytest.mark.anyio

#: The stand-in agent prints "failed on purpose" on stderr and exits 3.
FAILING = "EXIT 3"


class Logged:
    """One client's ``notifications/message``."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def __call__(self, params: Any) -> None:
        self.messages.append(params)

    def stderr(self) -> list[str]:
        return [m.data["stderr"] for m in self.messages if isinstance(m.data, dict) and "stderr" in m.data]


async def _run_both(url: str, asking: dict[str, Any], silent: dict[str, Any]) -> tuple[Logged, Logged]:
    """Both clients connected at once; the asking one sets debug (``set_level``), then each runs a
    failing prompt in its own workspace, at the same time."""
    asked, quiet = Logged(), Logged()
    async with (
        mcp_client(url, logging_callback=asked, **asking) as first,
        mcp_client(url, logging_callback=quiet, **silent) as second,
    ):
        if asking.get("mode") == "legacy":
            await first.set_logging_level("debug")
        async with anyio.create_task_group() as group:
            for client, workspace in ((first, "a"), (second, "b")):
                group.start_soon(client.call_tool, "run_prompt", {"prompt": FAILING, "workspace": workspace})
    return asked, quiet


async def test_a_handshake_client_that_never_asked_gets_no_log_messages(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        asked, quiet = await _run_both(f"{base}/mcp", {"mode": "legacy"}, {"mode": "legacy"})
    assert quiet.messages == []
    assert any("failed on purpose" in text for text in asked.stderr())


async def test_a_2026_client_that_never_asked_gets_no_log_messages(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        asked, quiet = await _run_both(f"{base}/mcp", {"log_level": "debug"}, {})
    assert quiet.messages == []
    assert any("failed on purpose" in text for text in asked.stderr())


async def test_clients_of_both_eras_keep_their_own_level(make_settings) -> None:
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        asked, quiet = await _run_both(url, {"mode": "legacy"}, {})
        assert quiet.messages == [] and asked.stderr()
        asked, quiet = await _run_both(url, {"log_level": "debug"}, {"mode": "legacy"})
    assert quiet.messages == [] and asked.stderr()


async def test_set_level_outside_a_session_changes_nothing(make_settings) -> None:
    """A raw one-shot ``logging/setLevel`` (no ``initialize``, no session) is answered, and no other
    client starts receiving messages."""
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        answer = await anyio.to_thread.run_sync(lambda: mcp_post(url, "logging/setLevel", {"level": "debug"}))
        assert sse_json(answer)["result"] == {}
        quiet = Logged()
        async with mcp_client(url, mode="legacy", logging_callback=quiet) as client:
            outcome = await client.call_tool("run_prompt", {"prompt": FAILING})
        assert outcome.is_error
    assert quiet.messages == []
