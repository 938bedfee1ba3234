"""A display stack like the image's, for live-view tests: Debian's Xvfb (it picks a free display
number), x11vnc on a loopback port, and Chromium headful on that display with CDP on loopback."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from agentbox_gateway.settings import GatewaySettings
from tests.support.headless_chromium import stop
from tests.support.requirements import require_chromium, require_program
from tests.support.servers import free_port, stop_group, wait_http


@dataclass(frozen=True)
class Display:
    name: str
    vnc_port: int
    cdp_url: str
    size: tuple[int, int]


#: Debian's noVNC, which the gateway serves the live view from.
NOVNC = Path("/usr/share/novnc")


def live_view_settings(settings: GatewaySettings, display: Display, api_key: str) -> GatewaySettings:
    """``settings`` of a gateway whose live view shows ``display`` (its Chromium, its x11vnc)."""
    return replace(
        settings,
        api_key=api_key,
        cdp_url=display.cdp_url,
        vnc_enabled=True,
        display=display.name,
        vnc_address=f"127.0.0.1:{display.vnc_port}",
        novnc_dir=NOVNC,
    )


def _require(program: str) -> str:
    return require_program(program, "xvfb, x11vnc")


@contextlib.contextmanager
def xvfb_display(size: tuple[int, int] = (1280, 1024)) -> Iterator[str]:
    """A fresh X display from Xvfb, which picks a free display number: its name (``:<n>``)."""
    xvfb = subprocess.Popen(
        [_require("Xvfb"), "-displayfd", "1", "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert xvfb.stdout is not None
        yield f":{xvfb.stdout.readline().decode().strip()}"
    finally:
        stop_group(xvfb, grace=5)


@contextlib.contextmanager
def chromium_on(display: str, command: list[str], profile: str, cdp_port: int) -> Iterator[str]:
    """Chromium's ``command`` (its profile ``profile``, DevTools on loopback ``cdp_port``) headful on
    ``display``, until its DevTools answer: their base URL. Stopped after, with its process group."""
    chromium = subprocess.Popen(
        command,
        env={"DISPLAY": display, "PATH": "/usr/bin:/bin", "HOME": profile},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{cdp_port}/json/version", timeout=30)
        yield f"http://127.0.0.1:{cdp_port}"
    finally:
        stop(chromium)


@contextlib.contextmanager
def display_stack(size: tuple[int, int] = (1280, 1024)) -> Iterator[Display]:
    with xvfb_display(size) as name, contextlib.ExitStack() as cleanup:
        profile = tempfile.mkdtemp(prefix="agentbox-display-")
        cleanup.callback(shutil.rmtree, profile, ignore_errors=True)
        vnc_port, cdp_port = free_port(), free_port()
        x11vnc = subprocess.Popen(
            [
                _require("x11vnc"),
                "-display",
                name,
                "-rfbport",
                str(vnc_port),
                "-localhost",
                "-forever",
                "-shared",
                "-nopw",
                "-quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        cleanup.callback(stop_group, x11vnc, grace=5)
        command = [
            require_chromium(),
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-sync",
            "--disable-background-networking",
            "--kiosk",
            f"--window-size={size[0]},{size[1]}",
            "--window-position=0,0",
            f"--user-data-dir={profile}",
            "--remote-debugging-address=127.0.0.1",
            f"--remote-debugging-port={cdp_port}",
            "about:blank",
        ]
        with chromium_on(name, command, profile, cdp_port) as cdp_url:
            yield Display(name, vnc_port, cdp_url, size)
