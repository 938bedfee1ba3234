"""The ``/v2`` door: AIO's ``aiod`` surface (commands as resources, durable terminals, path-keyed
files with tar trees, watchers with cursors, code with rich outputs), one FastAPI router per family,
each calling the same planes as ``/v1`` and the MCP tools. Built into the REST door's app, so ``/v2``
has the same guards, body caps and error envelope as ``/v1``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter

    from ...planes import Planes
    from ...settings import GatewaySettings


def routers(planes: Planes, settings: GatewaySettings) -> list[APIRouter]:
    """Every ``/v2`` router, in the order they appear in the API description."""
    from . import browser, code, commands, computer, fs, pty, sandbox, watch

    return [
        sandbox.router(planes),
        commands.router(planes),
        fs.router(planes, settings),
        watch.router(planes),
        pty.router(planes),
        browser.router(planes),
        computer.router(planes),
        code.router(planes),
    ]
