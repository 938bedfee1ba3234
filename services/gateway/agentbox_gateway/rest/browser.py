"""REST door of the browser plane, as the agent-sandbox SDK calls it: ``GET /v1/browser/info``,
``GET /v1/browser/screenshot`` (raw PNG), ``POST /v1/browser/actions`` (a bare action object),
``POST /v1/browser/config`` (display resolution). No reachable Chromium -> 503 with the envelope."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter, Body, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response

from ..cdp_proxy import request_public_base, with_ticket
from ..planes.browser import BrowserError, BrowserUnavailable, InvalidAction
from ..vnc import signed_vnc_url
from .bodies import StrictBody
from .envelope import RestError, error_responses, ok

if TYPE_CHECKING:
    from ..planes import Planes

T = TypeVar("T")


class Resolution(StrictBody):
    width: int
    height: int


class BrowserConfig(StrictBody):
    resolution: Resolution | None = None


async def _guarded(operation: Awaitable[T], what: str) -> T:
    """Plane errors as HTTP: 503 no Chromium, 422 rejected input, 500 failed in the browser."""
    try:
        return await operation
    except BrowserUnavailable as exc:
        raise RestError(503, "Browser unavailable: no reachable CDP port", hint=str(exc)) from exc
    except InvalidAction as exc:
        location = ("body", exc.field) if exc.field else ("body",)
        raise RequestValidationError([{"loc": location, "msg": str(exc), "type": "value_error"}]) from exc
    except BrowserError as exc:
        raise RestError(500, f"{what} failed: {exc}") from exc


def router(planes: Planes) -> APIRouter:
    plane = planes.browser
    api = APIRouter(prefix="/v1/browser", tags=["browser"], responses=error_responses(400, 503))

    @api.get("/info")
    async def browser_info(request: Request) -> dict[str, Any]:
        """CDP URL (through this gateway), user agent, viewport; ``vnc_url`` (the live view) or "" (none)."""
        base = request_public_base(request, plane.local_base)
        info = await _guarded(plane.info(base), "browser info")
        cdp_url = with_ticket(info["cdp_url"], request.scope)
        return ok({**info, "cdp_url": cdp_url, "vnc_url": signed_vnc_url(info["vnc_url"], request.scope) or ""})

    @api.get(
        "/screenshot",
        response_class=Response,
        responses={200: {"content": {"image/png": {}}, "description": "PNG of the browser's display"}},
    )
    async def browser_screenshot() -> Response:
        shot = await _guarded(plane.screenshot(), "screenshot")
        size = {"width": str(shot.width), "height": str(shot.height)}
        return Response(
            shot.png,
            media_type=shot.mime_type,
            headers={
                "X-Screenshot-Width": size["width"],
                "X-Screenshot-Height": size["height"],
                "X-Display-Width": size["width"],
                "X-Display-Height": size["height"],
            },
        )

    @api.post("/actions")
    async def browser_action(action: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        """One GUI action object, e.g. ``{"action_type": "CLICK", "x": 10, "y": 20}``."""
        performed = await _guarded(plane.execute_action(action), "action")
        result = {"status": "success", "action_performed": performed}
        return {**ok(result), **result}

    @api.post("/config")
    async def browser_config(config: BrowserConfig) -> dict[str, Any]:
        """Set the display resolution (one of the SDK's allowed sizes); the page area follows."""
        if config.resolution is None:
            viewport = await _guarded(plane.viewport(), "browser config")
        else:
            viewport = await _guarded(
                plane.set_viewport(config.resolution.width, config.resolution.height), "browser config"
            )
        return ok({"viewport": viewport})

    return api
