"""REST door of the browser plane, as the agent-sandbox SDK calls it: ``GET /v1/browser/info``,
``GET /v1/browser/screenshot`` (raw PNG), ``POST /v1/browser/actions`` (a bare action object),
``POST /v1/browser/config`` (display resolution). No reachable Chromium -> 503 with the envelope
(the plane's errors are answered by the one handler); a rejected action or resolution is a 422 like
any invalid body, as the SDK expects."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Body, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ConfigDict

from ...planes.browser import RESOLUTIONS, InvalidAction, action_schema
from ..shared.addresses import gateway_base, request_public_base
from ..shared.browser_links import browser_info_data
from .bodies import StrictBody
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


class Resolution(StrictBody):
    """One of the plane's sizes (the schema lists them, the plane refuses any other with 422)."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"width": {"const": width}, "height": {"const": height}}}
                for width, height in sorted(RESOLUTIONS, reverse=True)
            ]
        }
    )
    width: int
    height: int


class BrowserConfig(StrictBody):
    resolution: Resolution | None = None


@contextlib.contextmanager
def _invalid_as_422() -> Iterator[None]:
    """A rejected action or setting answered as FastAPI answers a bad body (422, the field named)."""
    try:
        yield
    except InvalidAction as exc:
        location = ("body", exc.field) if exc.field else ("body",)
        raise RequestValidationError([{"loc": location, "msg": exc.detail, "type": "value_error"}]) from exc


def router(planes: Planes) -> APIRouter:
    plane = planes.browser
    local_base = gateway_base(planes.settings)
    api = APIRouter(prefix="/v1/browser", tags=["browser"], responses=error_responses(400, 503))

    @api.get("/info")
    async def browser_info(request: Request) -> dict[str, Any]:
        """CDP URL (through this gateway), user agent, viewport; ``vnc_url`` (the live view) or "" (none)."""
        data = browser_info_data(await plane.info(), request_public_base(request, local_base), request.scope)
        return ok({**data, "vnc_url": data["vnc_url"] or ""})

    @api.get(
        "/screenshot",
        response_class=Response,
        responses={200: {"content": {"image/png": {}}, "description": "PNG of the browser's display"}},
    )
    async def browser_screenshot() -> Response:
        shot = await plane.screenshot()
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

    @api.post("/actions", openapi_extra={"requestBody": {"content": {"application/json": {"schema": action_schema()}}}})
    async def browser_action(action: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        """One GUI action object, e.g. ``{"action_type": "CLICK", "x": 10, "y": 20}``."""
        with _invalid_as_422():
            performed = await plane.execute_action(action)
        result = {"status": "success", "action_performed": performed}
        return {**ok(result), **result}

    @api.post("/config")
    async def browser_config(config: BrowserConfig) -> dict[str, Any]:
        """Set the display resolution (one of the SDK's allowed sizes); the page area follows."""
        if config.resolution is None:
            viewport = await plane.viewport()
        else:
            with _invalid_as_422():
                viewport = await plane.set_viewport(config.resolution.width, config.resolution.height)
        return ok({"viewport": viewport})

    return api
