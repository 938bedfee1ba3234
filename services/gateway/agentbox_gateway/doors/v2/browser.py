"""``/v2/browser/*``: aiod's alias of the ``/v1/browser/*`` routes that survive in ``/v2`` (same
routes, same bodies, the same handlers). The page-level ``/v1/browser/page/*``, ``state``,
``captcha``, ``restart`` and the ``network`` routes but ``requests`` have no alias: in ``/v2`` page
automation belongs to CDP clients (``/cdp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter
from fastapi.routing import APIRoute

if TYPE_CHECKING:
    from ...planes import Planes

V1_PREFIX = "/v1/browser/"
V2_PREFIX = "/v2/browser/"
#: aiod's list of the ``/v1/browser/*`` routes that still answer (start/migration.md); agentbox
#: serves those it has: info, screenshot, actions, config, tabs, cookies, network/requests.
SURVIVING = (
    "navigate",
    "screenshot",
    "click",
    "fill",
    "evaluate",
    "upload",
    "config",
    "cdp",
    "snapshot",
    "tabs",
    "cookies",
    "info",
    "network/requests",
    "actions",
)


def survives(path: str) -> bool:
    """Whether a ``/v1/browser/...`` route is one ``/v2/browser`` aliases."""
    rest = path.removeprefix(V1_PREFIX)
    return path.startswith(V1_PREFIX) and any(rest == name or rest.startswith(f"{name}/") for name in SURVIVING)


def router(planes: Planes) -> APIRouter:
    from ..rest import browser, browser_page

    api = APIRouter(tags=["v2 browser"])
    for source in (browser.router(planes), browser_page.router(planes)):
        for route in source.routes:
            if not isinstance(route, APIRoute) or not survives(route.path):
                continue
            api.add_api_route(
                V2_PREFIX + route.path.removeprefix(V1_PREFIX),
                route.endpoint,
                methods=sorted(route.methods or ()),
                response_model=route.response_model,
                status_code=route.status_code,
                dependencies=route.dependencies,
                summary=route.summary,
                description=route.description,
                response_description=route.response_description,
                responses=route.responses,
                response_class=route.response_class,
                name=f"v2_{route.name}",
                openapi_extra=route.openapi_extra,
            )
    return api
