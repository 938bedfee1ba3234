"""The browser program's life cycle: Chromium supervised and restarted, clean shutdown, no Chromium
left behind, configuration errors naming the variable."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from agentbox_browser.chromium import chromium_command
from agentbox_browser.cli import settings_from
from agentbox_browser.session import DRIVER_NODE_OPTIONS
from agentbox_browser.settings import BrowserSettings, Viewport
from agentbox_common.settings import ConfigError
from tests.browser.conftest import BrowserProgram, start_program
from tests.support.requirements import require_chromium
from tests.support.servers import console_script, free_port

pytestmark = pytest.mark.chromium


def _wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _user_data_dir(browser: BrowserProgram) -> str:
    [pid] = browser.chromium_pids()
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        args = handle.read().decode().split("\0")
    return next(arg.split("=", 1)[1] for arg in args if arg.startswith("--user-data-dir="))


def test_tools_recover_after_chromium_is_killed(site: str) -> None:
    with start_program() as browser:
        browser.ok("browser_navigate", {"url": f"{site}/form"})
        first_pid = browser.chromium_pids()
        first_profile = _user_data_dir(browser)

        browser.kill_chromium()
        browser.wait_chromium("down", timeout=10)
        message = browser.error("browser_get_text")
        assert message.startswith("browser unavailable: "), message

        browser.wait_chromium("running", timeout=30)
        assert browser.ok("browser_navigate", {"url": f"{site}/"}).startswith(f"Navigated to {site}/")
        assert "Welcome home" in browser.ok("browser_get_text")
        assert browser.chromium_pids() != first_pid
        assert not os.path.exists(first_profile), "the dead Chromium's profile is removed"
        assert browser.process.poll() is None, "the program itself kept running"


def test_shutdown_stops_chromium_and_removes_its_profile() -> None:
    with start_program() as browser:
        profile = _user_data_dir(browser)
        assert os.path.isdir(profile)
        browser.process.send_signal(signal.SIGTERM)
        # uvicorn shuts down gracefully, then re-raises the signal it caught.
        assert browser.process.wait(20) in (0, -signal.SIGTERM)
        assert browser.chromium_pids() == []
        assert not os.path.exists(profile)


def test_chromium_dies_with_a_killed_program_and_the_next_one_cleans_up() -> None:
    with start_program() as browser:
        profile = _user_data_dir(browser)
        browser.process.kill()
        browser.process.wait(10)
        _wait_until(lambda: not browser.chromium_pids(), 10, "Chromium outlived the browser program")
    assert os.path.isdir(profile), "a killed program cannot remove its Chromium profile"
    with start_program():
        assert not os.path.exists(profile), "the next program removes the stale profile"


def test_a_chromium_that_cannot_start_is_reported_not_fatal() -> None:
    port = free_port()
    env = {
        **os.environ,
        "AGENTBOX_BROWSER_PORT": str(port),
        "AGENTBOX_CDP_PORT": str(free_port()),
        "AGENTBOX_CHROMIUM": "/bin/false",
        "LOG_LEVEL": "CRITICAL",
    }
    process = subprocess.Popen(
        [console_script("agentbox-browser")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        browser = BrowserProgram(f"http://127.0.0.1:{port}", 0, process)
        _wait_until(lambda: _answers(browser), 30, "the program did not serve /health")
        assert browser.health() == {"status": "ok", "chromium": "down"}
        message = browser.error("browser_navigate", {"url": "about:blank"})
        assert message.startswith("browser unavailable: chromium failed to start: chromium exited with code 1")
    finally:
        process.terminate()
        process.wait(20)


def _answers(browser: BrowserProgram) -> bool:
    try:
        browser.health()
        return True
    except httpx.HTTPError:
        return False


def test_a_cdp_port_in_use_stops_the_program_with_a_clear_message() -> None:
    require_chromium()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cdp_port = taken.getsockname()[1]
        done = subprocess.run(
            [console_script("agentbox-browser"), "--port", str(free_port()), "--cdp-port", str(cdp_port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode != 0
    assert f"AGENTBOX_CDP_PORT {cdp_port} is already in use" in done.stderr


def test_a_bad_flag_names_its_variable() -> None:
    done = subprocess.run(
        [console_script("agentbox-browser"), "--viewport", "huge"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode != 0
    assert "AGENTBOX_VIEWPORT must look like 1280x720, got 'huge'" in done.stderr


def test_settings_defaults_and_errors() -> None:
    chromium = require_chromium()
    settings = BrowserSettings.from_env({"AGENTBOX_CHROMIUM": chromium})
    assert (settings.host, settings.port, settings.cdp_port) == ("127.0.0.1", 8100, 9222)
    assert settings.viewport == Viewport(1280, 720) and settings.headless and settings.nav_timeout == 30.0
    assert settings.extra_args == ()
    assert BrowserSettings.from_env({"AGENTBOX_CHROMIUM": chromium, "AGENTBOX_VIEWPORT": "800,600"}).viewport == (
        Viewport(800, 600)
    )
    bad = {
        "AGENTBOX_BROWSER_PORT": "http",
        "AGENTBOX_CDP_PORT": "70000",
        "AGENTBOX_VIEWPORT": "0x10",
        "AGENTBOX_HEADLESS": "maybe",
        "AGENTBOX_BROWSER_ARGS": "--flag='unclosed",
        "AGENTBOX_NAV_TIMEOUT": "soon",
        "AGENTBOX_CHROMIUM": "/no/such/chromium",
    }
    for variable, value in bad.items():
        env = {"AGENTBOX_CHROMIUM": chromium, variable: value}
        with pytest.raises(ConfigError, match=variable):
            BrowserSettings.from_env(env)


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    chromium = require_chromium()
    monkeypatch.setenv("AGENTBOX_CHROMIUM", chromium)
    monkeypatch.setenv("AGENTBOX_BROWSER_PORT", "8200")
    monkeypatch.setenv("AGENTBOX_HEADLESS", "true")
    settings = settings_from(
        [
            "--port",
            "8300",
            "--no-headless",
            "--browser-args",
            "--lang=fr --mute-audio",
            "--viewport",
            "640x480",
            "--nav-timeout",
            "5",
        ]
    )
    assert settings.port == 8300 and not settings.headless
    assert settings.extra_args == ("--lang=fr", "--mute-audio")
    assert settings.viewport == Viewport(640, 480) and settings.nav_timeout == 5.0
    command = chromium_command(settings, "/tmp/profile")
    assert "--headless=new" not in command
    assert "--remote-debugging-address=127.0.0.1" in command and "--window-size=640,480" in command
    assert command[-3:] == ["--lang=fr", "--mute-audio", "about:blank"]
    assert "--user-data-dir=/tmp/profile" in command
    # Playwright's screenshot switches; Chromium honours only one --disable-features, so it is one list.
    (enabled,) = [flag for flag in command if flag.startswith("--enable-features=")]
    assert "CDPScreenshotNewSurface" in enabled.split("=", 1)[1].split(",")
    (disabled,) = [flag for flag in command if flag.startswith("--disable-features=")]
    assert "PaintHolding" in disabled.split("=", 1)[1].split(",")


def test_the_first_call_never_acts_on_the_gateways_settings_tab(site: str) -> None:
    """The gateway's short-lived ``chrome://net-internals`` tab (it re-applies proxy settings) may be the
    newest tab when the program connects; the tools keep to the user's tabs."""
    with start_program() as browser:
        browser.wait_chromium("running")
        cdp = f"http://127.0.0.1:{browser.cdp_port}"
        httpx.put(f"{cdp}/json/new?chrome://net-internals/#proxy", timeout=10).raise_for_status()
        browser.ok("browser_navigate", {"url": f"{site}/form"})
        urls = [target["url"] for target in httpx.get(f"{cdp}/json/list", timeout=10).json()]
        assert any(url.startswith("chrome://net-internals/") for url in urls), urls
        assert f"{site}/form" in urls, urls


def _environment(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as handle:
        pairs = [entry.decode().split("=", 1) for entry in handle.read().split(b"\0") if b"=" in entry]
    return dict(pairs)


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(child) for child in handle.read().split()]


def test_the_playwright_driver_gets_its_v8_options() -> None:
    with start_program({"NODE_OPTIONS": "--no-warnings"}) as browser:
        browser.ok("browser_get_text")  # the driver is up
        children = _children(browser.process.pid)
        [driver] = [pid for pid in children if "playwright/driver" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert _environment(driver)["NODE_OPTIONS"] == f"{DRIVER_NODE_OPTIONS} --no-warnings"  # the caller's win


PROBE = """
import sys
from agentbox_browser.server import build_app
from agentbox_browser.settings import BrowserSettings
build_app(BrowserSettings())
print(sorted({name.split(".")[0] for name in sys.modules} & {"markdownify", "bs4"}))
"""


def test_building_the_program_loads_no_html_to_markdown_converter() -> None:
    loaded = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr
