"""The capability report: which planes are up right now. Cached briefly, and it never fails or hangs
because one plane does (a broken browser shows up as ``absent``)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

import anyio
import anyio.to_thread

from agentbox_common.processes import sandbox_environment

from ..status import ABSENT, Status, status_of

CAPABILITIES_TTL = 5.0
BROWSER_STATUS_TIMEOUT = 5.0
_FILE_OPERATIONS = (
    "read",
    "write",
    "replace",
    "search",
    "find",
    "list",
    "grep",
    "glob",
    "upload",
    "download",
    "str_replace_editor",
)

BrowserStatus = Callable[[], Awaitable[dict[str, Any]]]


class ExecCapability(TypedDict):
    status: Status
    available: bool
    #: Where ``bash`` is, or None.
    bash: str | None
    pty: bool


class CodeCapability(TypedDict):
    status: Status
    available: bool
    python: bool
    javascript: bool
    #: The interpreters (``python3``, ``node``) not found.
    missing: list[str]


class CapabilityReport(TypedDict):
    """Which planes are up: each file operation, exec, the code interpreter, and the browser as its
    plane reports it (``{"status": "absent", "error": ...}`` when that fails); every plane's
    ``status`` is from :mod:`..status`."""

    files: dict[str, bool]
    exec: ExecCapability
    code_interpreter: CodeCapability
    browser: dict[str, Any]


class Capabilities:
    """The last report and when it was made; one probe at a time."""

    def __init__(self) -> None:
        self._cached: tuple[float, CapabilityReport] | None = None
        self._lock = anyio.Lock()

    def forget(self) -> None:
        self._cached = None

    async def report(self, browser_status: BrowserStatus | None, refresh: bool = False) -> CapabilityReport:
        """Which planes are up right now; cached for 5 s unless ``refresh``. Without a browser status
        probe the browser is ``absent``."""
        async with self._lock:
            cached = self._cached
            if not refresh and cached is not None and time.monotonic() - cached[0] < CAPABILITIES_TTL:
                return cached[1]
            report = await _probe(browser_status)
            self._cached = (time.monotonic(), report)
            return report


async def _probe(browser_status: BrowserStatus | None) -> CapabilityReport:
    path = sandbox_environment().get("PATH")

    def locate() -> dict[str, str | None]:
        found: dict[str, str | None] = {name: shutil.which(name, path=path) for name in ("bash", "python3", "node")}
        found["pty"] = "/dev/ptmx" if os.path.exists("/dev/ptmx") else None
        return found

    found = await anyio.to_thread.run_sync(locate)
    try:
        if browser_status is None:
            raise LookupError("no browser plane")
        with anyio.fail_after(BROWSER_STATUS_TIMEOUT):
            browser = dict(await browser_status())
    except Exception as exc:  # the report must never fail (or hang) because one plane does
        browser = {"status": ABSENT, "error": f"{type(exc).__name__}: {exc}"}
    missing = [name for name in ("python3", "node") if found[name] is None]
    code_available = len(missing) < 2
    return {
        "files": dict.fromkeys(_FILE_OPERATIONS, True),
        "exec": {
            "status": status_of(found["bash"] is not None),
            "available": found["bash"] is not None,
            "bash": found["bash"],
            "pty": found["pty"] is not None,
        },
        "code_interpreter": {
            "status": status_of(code_available),
            "available": code_available,
            "python": found["python3"] is not None,
            "javascript": found["node"] is not None,
            "missing": missing,
        },
        "browser": browser,
    }
