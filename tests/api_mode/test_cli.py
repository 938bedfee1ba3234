"""The real ``agentbox-api`` console command: it serves API mode with MCP mounted, and refuses to
start (non-zero exit, a message naming the variable) without models."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx

from tests.mcp_mode.helpers import StandIn, mcp_post, sse_json
from tests.support.servers import console_script, free_port, run_command


def _base_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AICODEBOX_")}


def test_console_script_serves_api_and_mcp(tmp_path: Path, stand_in: StandIn) -> None:
    port = free_port()
    env = {
        **_base_env(),
        "AICODEBOX_API_MODE": "1",
        "AICODEBOX_MCP_MODE": "1",
        "AICODEBOX_API_MODE_PORT": str(port),
        "AICODEBOX_API_MODE_HOST": "127.0.0.1",
        "AICODEBOX_API_MODE_TOKEN": "api-tok",
        "AICODEBOX_MCP_MODE_TOKEN": "mcp-tok",
        "AICODEBOX_AVAILABLE_MODELS": "model-a",
        "AICODEBOX_WORKSPACE": str(tmp_path / "ws"),
        "AICODEBOX_STATE_DIR": str(tmp_path / "state"),
        "AICODEBOX_AGENT_BINARY": str(stand_in.path),
    }
    base = f"http://127.0.0.1:{port}"
    with run_command([console_script("agentbox-api")], env=env, ready_url=f"{base}/healthz"):
        assert httpx.get(f"{base}/healthz").json() == {"ok": True, "adapter": "claude"}
        api = {"Authorization": "Bearer api-tok"}
        models = httpx.get(f"{base}/openai/v1/models", headers=api).json()
        assert [m["id"] for m in models["data"]] == ["model-a"]
        answer = httpx.post(f"{base}/run", json={"prompt": "hi"}, headers=api, timeout=30)
        assert answer.json()["text"] == "echo: hi"
        assert httpx.get(f"{base}/status").status_code == 401
        listed = mcp_post(f"{base}/mcp/", headers={"Authorization": "Bearer mcp-tok"})
        assert len(sse_json(listed)["result"]["tools"]) == 5
        assert mcp_post(f"{base}/mcp", headers=api).status_code == 401
    assert stand_in.calls()[0]["secrets_seen"] == []  # neither token reaches the agent


def test_console_script_refuses_to_start_without_models(tmp_path: Path) -> None:
    env = {**_base_env(), "AICODEBOX_API_MODE": "1", "AICODEBOX_WORKSPACE": str(tmp_path / "ws")}
    done = subprocess.run([console_script("agentbox-api")], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "refusing to start" in done.stderr and "AICODEBOX_AVAILABLE_MODELS" in done.stderr
