"""``/v2/computer/*``: aiod's desktop routes over the computer plane (the sandbox's X display): info,
the screenshot as a PNG body with its geometry headers, one action or an atomic batch, the pointer,
the clipboard, the windows, the accessibility tree and its nodes, and the display recording. Without
a display every route but ``info`` answers 503 with a hint (the plane's ``DisplayOff``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.responses import Response
from pydantic import ConfigDict, Field

from ...planes.browser import PageFailed
from ...planes.computer import (
    MAX_BATCH_ACTIONS,
    MAX_CLIPBOARD_BYTES,
    ActionsResult,
    Node,
    computer_action_schema,
    tree_query,
)
from ..rest.bodies import StrictBody
from ..rest.envelope import RestError, error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


class Batch(StrictBody):
    model_config = ConfigDict(extra="forbid")

    actions: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH_ACTIONS)
    include_screenshot: bool = False


class ClipboardText(StrictBody):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=MAX_CLIPBOARD_BYTES)


class Record(StrictBody):
    model_config = ConfigDict(extra="forbid")

    action: Literal["start", "stop", "status"]
    save_path: str | None = Field(None, min_length=1)
    fps: int | None = Field(None, ge=1, le=60)
    crf: int | None = Field(None, ge=0, le=51, description="H.264 quality (lower: better, larger)")
    max_duration: float | None = Field(None, gt=0, le=600, description="seconds; stops by itself")
    width: int | None = Field(None, ge=16, le=7680)
    height: int | None = Field(None, ge=16, le=4320)


def _result(result: ActionsResult) -> dict[str, Any]:
    data: dict[str, Any] = {"status": "success" if result.failed_index is None else "failed"}
    if result.screenshot is not None:
        data["screenshot"] = result.screenshot.data_base64
    if result.screenshot_error is not None:
        data["screenshot_error"] = result.screenshot_error
    return data


def _tree_filters(
    scope: Literal["foreground", "desktop"] | None = Query(None, description="the active window, or every one"),
    role: str | None = Query(None, description="keep only nodes whose role matches"),
    name: str | None = Query(None, description="keep only nodes whose name matches"),
    match: Literal["substring", "exact", "regex"] | None = Query(None, description="how role and name compare"),
    states: str | None = Query(None, description="comma-separated states a node must all carry"),
    include_offscreen: bool = Query(False, description="include nodes not showing"),
    max_depth: int | None = Query(None, description="1-64, default 32 (clamped)"),
    max_nodes: int | None = Query(None, description="1-20000, default 5000 (clamped)"),
    timeout_ms: int | None = Query(None, description="100-60000, default 5000 (clamped)"),
) -> dict[str, Any]:
    return {
        "scope": scope,
        "role": role,
        "name": name,
        "match": match,
        "states": states,
        "include_offscreen": include_offscreen,
        "max_depth": max_depth,
        "max_nodes": max_nodes,
        "timeout_ms": timeout_ms,
    }


def router(planes: Planes) -> APIRouter:
    plane = planes.computer
    api = APIRouter(prefix="/v2/computer", tags=["v2 computer"], responses=error_responses(400, 404, 413, 503, 504))

    @api.get("/info")
    async def computer_info() -> dict[str, Any]:
        """The display found, its resolution, what works on it (``capabilities``) and ``warnings``."""
        info = await plane.info()
        return ok(
            {
                "available": info.available,
                "display": info.display,
                "xauthority": info.xauthority,
                "screen_resolution": info.screen_resolution,
                "capabilities": info.capabilities,
                "warnings": info.warnings,
            }
        )

    @api.get(
        "/screenshot",
        response_class=Response,
        responses={200: {"content": {"image/png": {}}, "description": "PNG of the whole display"}},
    )
    async def computer_screenshot() -> Response:
        """The whole display (every window) as a PNG body; the geometry is in the headers."""
        shot = await plane.screenshot()
        width, height = str(shot.width), str(shot.height)
        headers = {"x-image-width": width, "x-image-height": height, "x-screen-width": width, "x-screen-height": height}
        return Response(shot.png, media_type="image/png", headers=headers)

    @api.post(
        "/actions",
        openapi_extra={"requestBody": {"content": {"application/json": {"schema": computer_action_schema()}}}},
    )
    async def computer_action(
        action: dict[str, Any] = Body(...),  # noqa: B008
        include_screenshot: bool = Query(False, description="a frame of the display after the action"),
    ) -> dict[str, Any]:
        """One action object: mouse, keyboard, ``WAIT``, ``SET_CLIPBOARD``, ``WINDOW_*``, ``NODE_*``."""
        result = await plane.execute(action, include_screenshot)
        data = {**_result(result), "action_performed": result.performed[0]}
        return {**ok(data), **data}

    @api.post("/actions/batch")
    async def computer_action_batch(batch: Batch) -> dict[str, Any]:
        """Up to 50 actions in order, with nothing else acting on the display between them (WAITs at
        most 20 s together). A failing action stops the batch: ``failed_index`` and ``error`` say
        which and why; the actions before it stay done."""
        result = await plane.execute_batch(batch.actions, batch.include_screenshot)
        data = {
            **_result(result),
            "performed": result.performed,
            "failed_index": result.failed_index,
            "error": result.error,
        }
        if result.failed_index is None:
            return ok(data)
        return {"success": False, "message": f"action {result.failed_index} failed", "data": data, "hint": None}

    @api.get("/cursor")
    async def computer_cursor() -> dict[str, Any]:
        """Where the pointer is, in screen pixels."""
        x, y = await plane.cursor()
        return ok({"x": x, "y": y})

    @api.get("/clipboard")
    async def computer_clipboard() -> dict[str, Any]:
        """The clipboard's text (5 s read timeout, 1 MiB cap; "" when it holds no text)."""
        return ok({"text": await plane.clipboard()})

    @api.post("/clipboard")
    async def computer_set_clipboard(body: ClipboardText) -> dict[str, Any]:
        """Put text on the clipboard (at most 1 MiB)."""
        await plane.set_clipboard(body.text)
        return ok({"text_length": len(body.text)})

    @api.get("/windows")
    async def computer_windows() -> dict[str, Any]:
        """The top-level windows (at most 200): ``window_id`` is the X window, valid while it exists."""
        listing = await plane.windows()
        windows = [
            {
                "window_id": w.window_id,
                "title": w.title,
                "process_id": w.process_id,
                "bounds": w.bounds,
                "minimized": w.minimized,
            }
            for w in listing.windows
        ]
        return ok({"snapshot_id": listing.snapshot_id, "windows": windows})

    @api.post("/windows/{window_id}/activate")
    async def computer_activate_window(window_id: int = Path(ge=1)) -> dict[str, Any]:
        """Raise a window, show it if minimized, and give it the keyboard focus."""
        return ok({"action_performed": await plane.activate_window(window_id)})

    @api.get("/accessibility")
    async def computer_accessibility(filters: dict[str, Any] = Depends(_tree_filters)) -> dict[str, Any]:  # noqa: B008
        """The display's accessibility tree (AT-SPI2): roles, names, states, bounds and node ids that
        stay valid while their element exists. Filters keep the branches leading to a match;
        ``truncated`` says a budget cut the walk short."""
        tree = await plane.accessibility(tree_query(**filters))
        return ok(
            {
                "roots": [root.as_dict(True) for root in tree.roots],
                "node_count": len(tree.nodes),
                "truncated": tree.truncated,
                "elapsed_ms": round(tree.elapsed_ms, 1),
            }
        )

    @api.get("/accessibility/nodes")
    async def computer_accessibility_nodes(
        filters: dict[str, Any] = Depends(_tree_filters),  # noqa: B008
        limit: int | None = Query(None, description="most nodes returned: 1-1000, default 50 (clamped)"),
        node_id: str | None = Query(None, description="resolve this one node (the search fields are ignored)"),
    ) -> dict[str, Any]:
        """The tree searched as a flat list (``?role=push button&name=Send``), or one node by id."""
        if node_id is not None:
            found: list[Node] = [await plane.node(node_id)]
            return ok({"nodes": [n.as_dict(False) for n in found], "truncated": False})
        query = tree_query(**filters, limit=limit)
        tree = await plane.accessibility(query)
        nodes = tree.nodes[: query.limit]
        truncated = tree.truncated or len(tree.nodes) > query.limit
        return ok({"nodes": [n.as_dict(False) for n in nodes], "truncated": truncated})

    @api.post("/record", responses=error_responses(400, 404, 408, 409, 502, 503, 504))
    async def computer_record(body: Record) -> dict[str, Any]:
        """``start`` (``save_path``, ``fps``, ``crf``, ``max_duration`` up to 600 s, ``width``,
        ``height``), ``status``, ``stop``: one recording of the display at a time (ffmpeg)."""
        try:
            return ok(await plane.record(body.model_dump(exclude_none=True)))
        except PageFailed as exc:  # the browser program's refusals keep their status, as on /v1/display/record
            if exc.status >= 500 and exc.status not in (503, 504):
                raise RestError(502, f"the browser program failed the operation: {exc}") from exc
            raise RestError(exc.status, str(exc)) from exc

    return api
