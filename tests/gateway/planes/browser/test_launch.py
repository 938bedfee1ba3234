"""``BROWSER_START_MODE``'s start on first use, with the image's own wrapper
(``agentbox-on-first-use``) holding a real program back on its FIFO: nothing runs until the launcher
asks, a call waits for the start, a restarted program does not wait again, and a browser that never
comes fails the call in its timeout instead of hanging it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from agentbox_gateway.planes.browser import BrowserPlane
from agentbox_gateway.planes.browser.errors import BrowserDidNotStart, BrowserUnavailable
from agentbox_gateway.planes.browser.launch import REQUESTED, BrowserLauncher, BrowserState
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.upstreams.test_aggregation_fakes import UPSTREAM_MAIN, make_router, tool
from tests.support.servers import free_port

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[4]
WRAPPER = ROOT / "images/rootfs/usr/local/bin/agentbox-on-first-use"


def start_dir(tmp_path: Path) -> Path:
    """What the entrypoint makes with ``BROWSER_START_MODE=manual``: the directory and a FIFO per program."""
    folder = tmp_path / "start-on-use"
    folder.mkdir(mode=0o700)
    os.mkfifo(folder / "browser.fifo", 0o600)
    return folder


@contextlib.contextmanager
def wrapped_upstream(port: int, folder: Path | None) -> Iterator[subprocess.Popen[bytes]]:
    """A fake browser program (an MCP upstream with ``browser_navigate``) behind the wrapper."""
    env = {**os.environ, "AGENTBOX_START_ON_USE_DIR": str(folder or "")}
    command = [str(WRAPPER), "browser", sys.executable, "-c", UPSTREAM_MAIN, str(port), "browser", "browser_navigate"]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def wait_accepts(port: int, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if accepts(port):
            return True
        time.sleep(0.05)
    return False


def launcher_for(port: int, mode: str, folder: Path | None, timeout: float = 30.0) -> BrowserLauncher:
    return BrowserLauncher(
        mode, f"http://127.0.0.1:{port}", registered=True, start_dir=str(folder or ""), timeout=timeout
    )


async def test_a_manual_browser_is_listed_but_not_started_until_its_first_call(tmp_path: Path) -> None:
    port, folder = free_port(), start_dir(tmp_path)
    launcher = launcher_for(port, "manual", folder)
    upstreams = make_router({"browser": {"url": f"http://127.0.0.1:{port}/mcp"}})
    upstreams.serve_while_starting({"browser"}, launcher, [tool("browser_navigate")])
    try:
        with wrapped_upstream(port, folder) as program:
            assert [t.name for t in await upstreams.list_tools(set())] == ["browser_navigate"]
            await anyio.sleep(0.5)
            assert program.poll() is None and not accepts(port), "the program started before it was used"
            assert launcher.state(serving=False) is BrowserState.NOT_STARTED
            assert upstreams.settled and await upstreams.waiting() == ["browser"]

            result = await upstreams.call_tool("browser_navigate", {"url": "about:blank"})
            assert result is not None and not result.is_error
            assert result.content[0].text == 'browser:browser_navigate:{"url": "about:blank"}'
            assert (folder / REQUESTED).exists() and launcher.up
            assert await upstreams.waiting() == [] and launcher.state(serving=True) is BrowserState.READY
    finally:
        await upstreams.aclose()


async def test_once_requested_a_restarted_program_starts_without_waiting(tmp_path: Path) -> None:
    """The mark outlives the program: supervisord's restart of a crashed browser is not held back.
    Asked before the program even runs (no one reads the FIFO yet), the request is not lost."""
    port, folder = free_port(), start_dir(tmp_path)
    launcher_for(port, "manual", folder).request()
    with wrapped_upstream(port, folder):
        assert wait_accepts(port), "a requested program waited"
    with wrapped_upstream(port, folder):
        assert wait_accepts(port), "a restarted program waited"


async def test_a_call_during_an_async_start_waits_for_the_browser(tmp_path: Path) -> None:
    port = free_port()
    launcher = launcher_for(port, "async", None)
    assert launcher.state(serving=False) is BrowserState.STARTING
    with wrapped_upstream(port, None):  # no start directory: the wrapper runs the program at once
        started = time.monotonic()
        await launcher.ensure()
        assert accepts(port) and launcher.up
    assert time.monotonic() - started < 20
    await launcher.ensure()  # once up, a later call goes straight on (and fails on its own if it is gone)


async def test_a_browser_that_never_starts_fails_the_call_after_the_timeout(tmp_path: Path) -> None:
    port, folder = free_port(), start_dir(tmp_path)
    launcher = launcher_for(port, "manual", folder, timeout=0.3)
    upstreams = make_router({"browser": {"url": f"http://127.0.0.1:{port}/mcp"}})
    upstreams.serve_while_starting({"browser"}, launcher, [tool("browser_navigate")])
    try:
        started = time.monotonic()
        with pytest.raises(BrowserDidNotStart, match=r"did not start within 0\.3 s"):
            await launcher.ensure()
        result = await upstreams.call_tool("browser_navigate", {})
        assert result is not None and result.is_error
        assert result.content[0].text == "upstream browser unavailable: the browser did not start within 0.3 s"
        assert time.monotonic() - started < 5
        assert [t.name for t in await upstreams.list_tools(set())] == ["browser_navigate"]
        assert launcher.state(serving=False) is BrowserState.STARTING
    finally:
        await upstreams.aclose()


async def test_without_a_browser_program_nothing_is_started_or_waited_for(tmp_path: Path) -> None:
    folder = start_dir(tmp_path)
    launcher = BrowserLauncher("manual", f"http://127.0.0.1:{free_port()}", registered=False, start_dir=str(folder))
    started = time.monotonic()
    await launcher.ensure()
    assert time.monotonic() - started < 0.1 and not (folder / REQUESTED).exists()


async def test_new_proxy_settings_do_not_start_a_manual_browser(tmp_path: Path) -> None:
    """Chromium reads its proxy settings when it starts: a change before its first use leaves it unstarted."""
    folder = start_dir(tmp_path)
    launcher = launcher_for(free_port(), "manual", folder)
    settings = replace(GatewaySettings.from_env({}), cdp_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(BrowserUnavailable, match="not started yet"):
        await BrowserPlane(settings, launcher).reload_proxy_settings(asyncio.Event(), 1.0)
    assert not launcher.requested and not (folder / REQUESTED).exists()
