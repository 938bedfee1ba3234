"""The level of ``notifications/message`` is each client's own (issue 28): with two official SDK
clients on one MCP-mode server, the one that asked for debug gets the agent's events (its stderr
included) and the one that never asked gets none, in both protocol eras; a ``logging/setLevel``
sent outside a session changes nothing for anyone. The session is only a label: a handshake
client that goes away mid-run still stops its agent, as before."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from .helpers import MCP_HEADERS, StandIn, mcp_client, mcp_post, serve_settings, sse_json, wait_gone

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


async def test_a_session_client_that_disconnects_still_stops_its_agent(make_settings, stand_in: StandIn) -> None:
    """The ``Mcp-Session-Id`` from ``initialize`` labels the client; the server stays stateless, so
    closing a call's stream still cancels it (an SDK session would keep the agent running)."""
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = {"name": "run_prompt", "arguments": {"prompt": "CHILD\nSLEEP 30"}}
    with serve_settings(make_settings()) as base:
        url = f"{base}/mcp"
        async with httpx.AsyncClient(timeout=30) as http:
            opened = await http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, headers=MCP_HEADERS
            )
            session = opened.headers["mcp-session-id"]
            assert len(session) == 32
            headers = {**MCP_HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
            async with http.stream("POST", url, json=body, headers=headers) as response:
                assert response.status_code == 200
                (started,) = await anyio.to_thread.run_sync(stand_in.wait_for_calls, 1)
        await anyio.to_thread.run_sync(wait_gone, [started["pid"], started["child"]])
        again = await run_once(url)
    assert again == "free again"


async def run_once(url: str) -> str:
    async with mcp_client(url, mode="legacy") as client:
        outcome = await client.call_tool("run_prompt", {"prompt": "ANSWER free again"})
    return outcome.content[0].text
