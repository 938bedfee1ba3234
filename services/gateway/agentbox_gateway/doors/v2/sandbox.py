"""``/v2/sandbox``: what the sandbox is and what it can do, as one object (aiod's shape: identity,
``workspace_dir``, ``capabilities``), and ``/v2/sandbox/packages?lang=``; the context plane behind
``/v1/sandbox``, ``/v1/capabilities`` and ``sandbox_get_context``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Query, Request

from ...planes.context import CapabilityReport, SandboxContext
from ..rest.envelope import error_responses, ok
from ..shared.addresses import gateway_base, request_public_base

if TYPE_CHECKING:
    from ...planes import Planes


def _capabilities(report: CapabilityReport) -> dict[str, Any]:
    """The report, with ``exec.pty`` an object as aiod reports it (``capabilities.exec.pty.available``)."""
    shaped: dict[str, Any] = dict(report)
    shaped["exec"] = {**report["exec"], "pty": {"available": report["exec"]["pty"]}}
    return shaped


def sandbox_info(snapshot: SandboxContext, report: CapabilityReport, surfaces: list[str]) -> dict[str, Any]:
    return {
        "version": snapshot.version,
        "user": snapshot.user,
        "home_dir": snapshot.home_dir,
        "workspace_dir": snapshot.workspace or snapshot.home_dir,
        "os": snapshot.os,
        "os_version": snapshot.os_version,
        "arch": snapshot.arch,
        "timezone": snapshot.timezone,
        "occupied_ports": snapshot.occupied_ports,
        "previews": snapshot.previews,
        "runtimes": snapshot.runtimes,
        "utils": snapshot.utils,
        "api_surfaces": surfaces,
        "capabilities": _capabilities(report),
    }


def router(planes: Planes) -> APIRouter:
    context = planes.context
    settings = planes.settings
    local_base = gateway_base(settings)
    surfaces = ["v2"] if settings.api_surface == "v2" else ["v1", "v2"]
    api = APIRouter(prefix="/v2/sandbox", tags=["v2 sandbox"], responses=error_responses(503))

    @api.get("")
    async def sandbox(
        request: Request, refresh: bool = Query(False, description="probe the capabilities now, not the 5 s cache")
    ) -> dict[str, Any]:
        """Identity (version, user, OS), ``home_dir`` and ``workspace_dir``, ports and their preview
        URLs, runtimes, tools, the surfaces served and ``capabilities`` (files, exec, code_interpreter,
        browser) in one object."""
        snapshot = await context.get_context(request_public_base(request, local_base))
        report = await context.capabilities(refresh=refresh)
        return ok(sandbox_info(snapshot, report, surfaces))

    @api.get("/packages")
    async def packages(lang: Literal["python", "nodejs"] = Query(description="python or nodejs")) -> dict[str, Any]:
        """``[{name, version}]`` of the sandbox's ``python3`` or the global npm packages."""
        [listing] = await context.get_packages(lang)
        return ok(listing.packages)

    return api
