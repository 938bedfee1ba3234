"""The browser addresses the gateway hands out (``browser_get_info``, ``GET /v1/browser/info``), on
the gateway's address as the caller sees it: Chromium's DevTools socket through ``/cdp`` and the live
view under ``/vnc``, each signed for a caller who authenticated in its own URL (a single-use ticket,
never the key). The browser plane says what the browser is; the doors make these URLs from it."""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

from ...planes.browser import BrowserInfo
from ..relays.cdp import with_ticket
from ..web.live_view import live_view_url, signed_vnc_url


def cdp_url(public_base: str, devtools_path: str) -> str:
    """``<ws|wss>://<host><prefix>/cdp/devtools/browser/<id>`` on ``public_base``."""
    base = public_base.rstrip("/")
    ws_base = "wss" + base[5:] if base.startswith("https:") else "ws" + base[4:]
    return f"{ws_base}/cdp{devtools_path}"


def browser_info_data(info: BrowserInfo, public_base: str, scope: Scope | None) -> dict[str, Any]:
    """``cdp_url`` and ``vnc_url`` (None: no live view) on ``public_base``, signed for the caller of
    ``scope`` (None: no caller, nothing signed), with the user agent and the viewport."""
    base = public_base.rstrip("/")
    cdp = cdp_url(base, info.devtools_path)
    vnc = live_view_url(base) if info.live_view else None
    if scope is not None:
        cdp, vnc = with_ticket(cdp, scope), signed_vnc_url(vnc, scope)
    return {"cdp_url": cdp, "user_agent": info.user_agent, "viewport": info.viewport, "vnc_url": vnc}
