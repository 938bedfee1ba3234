"""Parse and validate ``EXTRA_MCP_SERVERS`` entries: ``{"name": {"url", "prefix"?, "headers"?}}``.

Only plain-HTTP MCP servers on loopback are aggregated: the gateway forwards calls without any
authentication of its own, so a remote or TLS endpoint would turn it into an open relay, and a
``command`` (stdio) entry would mean spawning programs from configuration. Such entries are skipped
with one warning at start-up, and the others still load, so one typo never takes the gateway down."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: Characters MCP clients accept in tool names; the name (or prefix) becomes part of every tool name.
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
#: RFC 9110 header field name.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


class InvalidEntry(ValueError):
    """An entry that cannot be aggregated; the message is the reason shown in the warning."""


@dataclass(frozen=True)
class UpstreamConfig:
    name: str
    url: str
    #: ``None``: the upstream's own names are kept, and only those starting with ``<name>_``.
    prefix: str | None = None
    #: Sent with every request to this upstream (e.g. its token); values are never logged.
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def name_prefix(self) -> str:
        """What every published name of this upstream starts with."""
        return f"{self.prefix if self.prefix is not None else self.name}_"

    def publish(self, tool: str) -> str | None:
        """The published name of upstream tool ``tool``; ``None`` when it cannot be routed back."""
        if self.prefix is not None:
            return self.name_prefix + tool
        return tool if tool.startswith(self.name_prefix) and len(tool) > len(self.name_prefix) else None

    def original(self, published: str) -> str | None:
        """The upstream's own name for ``published``, judged by the name alone."""
        if not published.startswith(self.name_prefix) or len(published) == len(self.name_prefix):
            return None
        return published[len(self.name_prefix) :] if self.prefix is not None else published


def _check_url(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidEntry('"url" must be a non-empty string')
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError as exc:
        raise InvalidEntry(f'"url" is not a valid URL ({exc})') from None
    if parts.scheme == "https":
        raise InvalidEntry("https upstreams are not supported; only http:// on 127.0.0.1, localhost or [::1]")
    if parts.scheme != "http":
        raise InvalidEntry(f"URL scheme {parts.scheme or '(none)'!r} is not supported; only http:// on loopback")
    if parts.username is not None or parts.password is not None:
        raise InvalidEntry('credentials in the URL are not allowed; use "headers"')
    host = (parts.hostname or "").lower()
    if host not in LOOPBACK_HOSTS:
        raise InvalidEntry(
            f"remote host {host or '(none)'!r} is not allowed; only http:// on 127.0.0.1, localhost or [::1]"
        )
    if port == 0:
        raise InvalidEntry('"url" has port 0')
    return value.strip()


def _check_prefix(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidEntry('"prefix" must be a string of letters, digits, "_", "-" or "."')
    return value


def _check_headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidEntry('"headers" must be an object of header names to string values')
    headers: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not _HEADER_NAME.match(key):
            raise InvalidEntry(f'"headers" has an invalid header name {key!r}')
        if not isinstance(item, str) or "\r" in item or "\n" in item:
            raise InvalidEntry(f'"headers" value for {key} must be a single-line string')
        headers[key] = item
    return headers


def parse_entry(name: Any, value: Any) -> UpstreamConfig:
    """One entry, or :class:`InvalidEntry` saying why it cannot be used."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidEntry('the name must be letters, digits, "_", "-" or "."')
    if not isinstance(value, Mapping):
        raise InvalidEntry(f"the entry must be an object, got {type(value).__name__}")
    if "command" in value:
        raise InvalidEntry('"command" (stdio) servers are not supported; only http:// on loopback')
    if "url" not in value:
        raise InvalidEntry('"url" is missing')
    return UpstreamConfig(
        name=name,
        url=_check_url(value["url"]),
        prefix=_check_prefix(value.get("prefix")),
        headers=_check_headers(value.get("headers")),
    )


def parse_upstreams(raw: Mapping[str, Any]) -> list[UpstreamConfig]:
    """The usable entries in registration order; each unusable one is logged once and skipped."""
    configs: list[UpstreamConfig] = []
    for name, value in raw.items():
        try:
            configs.append(parse_entry(name, value))
        except InvalidEntry as exc:
            logger.warning("EXTRA_MCP_SERVERS / --mcp-servers entry %r skipped: %s", name, exc)
    return configs
