"""The gateway's address as a caller reaches it, from ``X-Forwarded-Proto``/``-Host``/``-Prefix``
(else ``Host``): the base of every URL a door hands out (CDP sockets, live view and terminal links,
preview URLs)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from ...settings import GatewaySettings

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$")
_PREFIX = re.compile(r"^[A-Za-z0-9._~!$&'()*+,;=:@%/\-]*$")


def gateway_base(settings: GatewaySettings) -> str:
    """``http://host:port`` of the gateway as configured (a wildcard bind reads as loopback): the
    fallback of every address below when a request names no host."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


def _first(value: str | None) -> str:
    """The client-side entry of a forwarded header that proxies may have appended to."""
    return (value or "").split(",")[0].strip()


def public_address(headers: Mapping[str, str], scheme: str, fallback_host: str) -> tuple[str, str, str]:
    """``(proto, host[:port], /prefix or "")``: how the caller reaches the gateway. Values that
    could not be part of a URL's authority or path are ignored rather than echoed."""
    proto = _first(headers.get("x-forwarded-proto")).lower() or scheme
    proto = {"wss": "https", "ws": "http"}.get(proto, proto)
    if proto not in ("http", "https"):
        proto = scheme
    host = _first(headers.get("x-forwarded-host")) or headers.get("host", "")
    if not _HOST.match(host):
        host = fallback_host
    prefix = _first(headers.get("x-forwarded-prefix")).strip("/")
    if not _PREFIX.match(prefix):
        prefix = ""
    return proto, host, "/" + prefix if prefix else ""


def public_base(headers: Mapping[str, str], scheme: str, fallback_host: str) -> str:
    """``http(s)://host[:port][/prefix]`` (see :func:`public_address`)."""
    proto, host, prefix = public_address(headers, scheme, fallback_host)
    return f"{proto}://{host}{prefix}"


def request_public_base(connection: HTTPConnection, fallback_base: str) -> str:
    """:func:`public_base` for a Starlette request or WebSocket; ``fallback_base`` is the
    gateway's configured address, used when the request names no host."""
    scheme = "https" if connection.url.scheme in ("https", "wss") else "http"
    return public_base(connection.headers, scheme, urlsplit(fallback_base).netloc)
