"""REST door of the egress plane (the browser's outbound proxy), as the agent-sandbox SDK calls it:
``/v1/proxy/upstream`` (GET, PUT, DELETE), ``/v1/proxy/mappings`` (GET, POST, DELETE ``/{source}``),
``/v1/proxy/excludes`` (GET, POST, DELETE), ``GET /v1/proxy/diagnose?url=`` and the PAC file,
``GET /v1/browser/proxy.pac``. Passwords
are answered as ``****`` only."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import ConfigDict, Field

from ...planes.egress import Applied
from .bodies import StrictBody, documented
from .envelope import error_responses, ok

if TYPE_CHECKING:
    from ...planes import Planes


# The egress plane's rules (planes/egress/rules.py) as JSON Schema patterns, a little narrower than the
# plane (IPv6 literals and surrounding spaces, which the plane also takes, are left out).
_HOST = r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*"
_PORT = r"([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_PATH = r"(/[^\s\x00-\x1f\x7f\x85]*)?"
_USER = r"[A-Za-z0-9._~%!$&'()*+,;=-]+(:[A-Za-z0-9._~%!$&'()*+,;=-]*)?@"
_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
UPSTREAM = rf"^([hH][tT][tT][pP]://)?({_USER})?{_HOST}:{_PORT}/?$"
MAPPING_SOURCE = rf"^([hH][tT][tT][pP][sS]?://)?(\*|(\*|\*\.)?{_HOST})(:{_PORT})?{_PATH}$"
MAPPING_TARGET = rf"^([hH][tT][tT][pP]://)?({_HOST}:)?{_PORT}{_PATH}$"
EXCLUDE = rf"^((\*\.|\.)?{_HOST}|({_OCTET}\.){{3}}{_OCTET}/([0-9]|[12][0-9]|3[0-2]))$"
DIAGNOSED_URL = rf"^[hH][tT][tT][pP][sS]?://{_HOST}(:{_PORT})?([/?#][^\s\x00-\x1f\x7f\x85]*)?$"


class UpstreamRequest(StrictBody):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(
        min_length=1,
        max_length=2048,
        description="[http://][user:pass@]host:port",
        json_schema_extra=documented(UPSTREAM),
    )
    auth_cmd: str | None = Field(None, max_length=4096, description="a shell command printing user:pass")


class MappingRequest(StrictBody):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(
        min_length=1,
        max_length=2048,
        description="[scheme://]host[:port][/path], * in the host",
        json_schema_extra=documented(MAPPING_SOURCE),
    )
    target: str = Field(
        min_length=1,
        max_length=2048,
        description="[host:]port[/path], host 127.0.0.1",
        json_schema_extra=documented(MAPPING_TARGET),
    )


class ExcludeRequest(StrictBody):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(
        min_length=1,
        max_length=512,
        description="example.com, *.example.com, .example.com, 10.0.0.0/8",
        json_schema_extra=documented(EXCLUDE),
    )


def _answer(data: Any, applied: Applied, message: str = "Operation successful") -> dict[str, Any]:
    """The envelope, with a ``hint`` when Chromium has not taken the change yet."""
    body = ok(data, message)
    if not applied.browser and applied.reason:
        body["hint"] = applied.reason
    return body


def router(planes: Planes) -> APIRouter:
    proxy = planes.egress
    api = APIRouter(tags=["proxy"], responses=error_responses(400, 404, 503))

    @api.get(
        "/v1/browser/proxy.pac",
        response_class=Response,
        tags=["browser"],
        responses={
            200: {
                "content": {"application/x-ns-proxy-autoconfig": {}},
                "description": "The PAC file Chromium follows (no credentials in it)",
            }
        },
    )
    async def proxy_pac() -> Response:
        return Response(
            proxy.pac(), media_type="application/x-ns-proxy-autoconfig", headers={"Cache-Control": "no-store"}
        )

    @api.get("/v1/proxy/upstream")
    async def get_upstream() -> dict[str, Any]:
        """``{addr, server, username, password}`` (password ``****``), or null: direct."""
        upstream = proxy.upstream()
        return ok(asdict(upstream) if upstream else None)

    @api.put("/v1/proxy/upstream")
    async def set_upstream(body: UpstreamRequest) -> dict[str, Any]:
        """Route the browser through an HTTP proxy; applies at once, no browser restart."""
        upstream, applied = await proxy.set_upstream(body.server, body.auth_cmd)
        return _answer(asdict(upstream), applied)

    @api.delete("/v1/proxy/upstream")
    async def remove_upstream() -> dict[str, Any]:
        applied = await proxy.remove_upstream()
        return _answer(None, applied, "Upstream proxy removed: the browser connects directly")

    @api.get("/v1/proxy/mappings")
    async def list_mappings() -> dict[str, Any]:
        return ok([asdict(mapping) for mapping in proxy.mappings()])

    @api.post("/v1/proxy/mappings")
    async def add_mapping(body: MappingRequest) -> dict[str, Any]:
        """Serve a host (pattern) from a local port: ``myapp.com`` -> ``:3000``."""
        mapping, applied = await proxy.add_mapping(body.source, body.target)
        return _answer(asdict(mapping), applied)

    @api.delete("/v1/proxy/mappings/{source:path}")
    async def remove_mapping(source: str) -> dict[str, Any]:
        mapping, applied = await proxy.remove_mapping(source)
        return _answer(asdict(mapping), applied)

    @api.get("/v1/proxy/excludes")
    async def list_excludes() -> dict[str, Any]:
        return ok(proxy.excludes())

    @api.post("/v1/proxy/excludes")
    async def add_exclude(body: ExcludeRequest) -> dict[str, Any]:
        """Hosts or networks the browser reaches directly, around the upstream."""
        applied = await proxy.add_exclude(body.pattern)
        return _answer(proxy.excludes(), applied)

    @api.delete("/v1/proxy/excludes")
    async def remove_exclude(body: ExcludeRequest) -> dict[str, Any]:
        applied = await proxy.remove_exclude(body.pattern)
        return _answer(proxy.excludes(), applied)

    @api.get("/v1/proxy/diagnose")
    async def diagnose(
        url: str = Query(..., min_length=1, max_length=8192, json_schema_extra=documented(DIAGNOSED_URL)),
    ) -> dict[str, Any]:
        """Fetch ``url`` as the settings route it: ``{url, route, matched_mapping, resolved_target,
        target_reachable, status_code, latency_ms, error}``."""
        diagnosis = await proxy.diagnose(url)
        return ok(asdict(diagnosis))

    return api
