"""``spawn_sandboxed``: every sandboxed child leads its own session and never sees the service's secrets."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agentbox_common.processes import spawn_sandboxed

pytestmark = pytest.mark.anyio


async def test_own_session_and_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIO_API_KEY", "secret-key")
    monkeypatch.setenv("SPAWN_PROBE", "seen")
    script = 'import os; print(os.getsid(0) == os.getpid(), os.environ.get("AIO_API_KEY"), os.environ["SPAWN_PROBE"])'
    process = await spawn_sandboxed("python3", "-c", script)
    stdout, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert (process.returncode, stderr) == (0, b"")
    assert stdout.decode().split() == ["True", "None", "seen"]
    assert os.getsid(0) != process.pid


async def test_given_environment_and_options(tmp_path: Path) -> None:
    (tmp_path / "marker").write_text("")
    process = await spawn_sandboxed(
        "sh", "-c", 'ls; echo "$ONLY"', env={"ONLY": "this", "PATH": os.defpath}, cwd=tmp_path
    )
    stdout, _ = await asyncio.wait_for(process.communicate(), 30)
    assert stdout.decode().split() == ["marker", "this"]
