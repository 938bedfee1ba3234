"""Helpers for the MCP-mode tests: the stand-in agent CLI, serving an app, MCP clients (official SDK
and raw HTTP, the way curl talks to it) and process-group checks."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentbox_mcp_mode.app import build_app
from agentbox_mcp_mode.settings import McpModeSettings
from tests.support.servers import serve_app

HERE = Path(__file__).parent
#: The arguments the claude adapter always passes (before any optional ones).
FIXED_CLAUDE = ["-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"]
#: A json_schema the tests' structured answers follow.
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


class StandIn:
    """The stand-in agent executable and what it recorded."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "fake-agent"
        self.path.write_text(f"#!{sys.executable}\n" + (HERE / "fake_agent.py").read_text())
        self.path.chmod(self.path.stat().st_mode | stat.S_IXUSR)
        self.log = directory / "calls.jsonl"

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def wait_for_calls(self, count: int, timeout: float = 10) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            calls = self.calls()
            if len(calls) >= count:
                return calls
            time.sleep(0.02)
        raise TimeoutError(f"stand-in agent was started {len(self.calls())} times, expected {count}")


def agent_env(workspace: Path, tmp_path: Path, stand_in: StandIn) -> dict[str, str]:
    """The environment both modes' test settings start from: temp workspace and state, stand-in CLI."""
    return {
        "AICODEBOX_WORKSPACE": str(workspace),
        "AICODEBOX_STATE_DIR": str(tmp_path / "state"),
        "AICODEBOX_AGENT_BINARY": str(stand_in.path),
        "AICODEBOX_ADAPTER": "claude",
        "AICODEBOX_RUN_TIMEOUT": "30",
    }


@contextlib.contextmanager
def serve_settings(settings: McpModeSettings) -> Iterator[str]:
    with serve_app(build_app(settings)) as base:
        yield base


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str | None = None, **client_args: Any) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http:
        async with Client(streamable_http_client(url, http_client=http), **client_args) as client:
            yield client


def tool_text(result: Any) -> str:
    return result.content[0].text


def process_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (PID 1 here may not reap orphans)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def wait_gone(pids: list[int], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(process_alive(pid) for pid in pids):
            return
        time.sleep(0.05)
    alive = [pid for pid in pids if process_alive(pid)]
    raise AssertionError(f"processes still alive: {alive}")


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def mcp_post(
    url: str,
    method: str = "tools/list",
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> httpx.Response:
    """One raw JSON-RPC request (stateless server: no initialize needed)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    return httpx.post(
        url, json=body, headers={**MCP_HEADERS, **(headers or {})}, timeout=timeout, follow_redirects=False
    )


def sse_json(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an SSE-framed (or plain JSON) answer."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError(f"no SSE data in {response.text!r}")
