"""A desktop like the image's for the computer tests: Xvfb, a session D-Bus with AT-SPI2's bus launcher
on it (at-spi2-core), and Chromium headful with its accessibility tree exposed
(``--force-renderer-accessibility``, ``ACCESSIBILITY_ENABLED=1``), showing one page."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.display import xvfb_display
from tests.support.headless_chromium import stop
from tests.support.polling import until
from tests.support.requirements import missing, require_chromium, require_program
from tests.support.servers import free_port, stop_group, wait_http

BUS_LAUNCHER = Path("/usr/libexec/at-spi-bus-launcher")


@dataclass(frozen=True)
class Desktop:
    display: str
    session_bus: str
    cdp_url: str


@contextlib.contextmanager
def _program(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        yield process
    finally:
        stop_group(process, grace=5)


@contextlib.contextmanager
def accessible_desktop(url: str, size: tuple[int, int] = (1280, 800)) -> Iterator[Desktop]:
    """The desktop with Chromium showing ``url``; yields once Chromium's DevTools answer."""
    dbus_daemon = require_program("dbus-daemon", "dbus-daemon")
    require_program("xclip", "xclip")
    if not BUS_LAUNCHER.exists():
        missing("at-spi2-core is not installed (apt-get install at-spi2-core)")
    with xvfb_display(size) as display, contextlib.ExitStack() as cleanup:
        folder = tempfile.mkdtemp(prefix="agentbox-desktop-")
        cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
        bus = f"unix:path={folder}/bus"
        env = {"PATH": "/usr/bin:/bin", "HOME": folder, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus}
        cleanup.enter_context(_program([dbus_daemon, "--session", "--nofork", f"--address={bus}"], env))
        until(Path(folder, "bus").exists, 10)  # the launcher needs the bus listening
        cleanup.enter_context(_program([str(BUS_LAUNCHER), "--launch-immediately"], env))
        cdp_port = free_port()
        chromium = subprocess.Popen(
            [
                require_chromium(),
                "--no-sandbox",
                "--test-type",
                "--disable-gpu",
                "--no-first-run",
                "--disable-sync",
                "--disable-background-networking",
                "--force-renderer-accessibility",
                f"--window-size={size[0]},{size[1]}",
                "--window-position=0,0",
                f"--user-data-dir={folder}/profile",
                "--remote-debugging-address=127.0.0.1",
                f"--remote-debugging-port={cdp_port}",
                url,
            ],
            env={**env, "ACCESSIBILITY_ENABLED": "1", "TMPDIR": os.environ.get("TMPDIR", "/tmp")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        cleanup.callback(stop, chromium)
        wait_http(f"http://127.0.0.1:{cdp_port}/json/version", timeout=30)
        yield Desktop(display, bus, f"http://127.0.0.1:{cdp_port}")
