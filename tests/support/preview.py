"""What the preview-proxy tests and benchmark share: the test app's path, reading its echo, and the
memory figures of a process's ``/proc/<pid>/status``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

#: tests/support/preview_app.py, the app started behind ``/proxy/{port}/`` (standard library only).
APP = Path(__file__).resolve().parent / "preview_app.py"


def echo(response: httpx.Response) -> dict[str, Any]:
    """The app's echo of a request, with its headers as a dict (lower-case names)."""
    assert response.status_code == 200, response.text
    answer = response.json()
    answer["headers"] = dict(answer["headers"])
    return answer


def memory_kib(status: str) -> dict[str, int]:
    """``VmRSS`` (resident now) and ``VmHWM`` (resident at its peak) in KiB from a ``/proc/<pid>/status`` text."""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {name: int(fields[name].split()[0]) for name in ("VmRSS", "VmHWM")}
