"""Host names as requests carry them: the ``Host`` header's parts, and which names are loopback."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_name", "split_host"]


def is_loopback_name(hostname: str | None) -> bool:
    """``localhost``, a ``*.localhost`` name or a loopback address (unbracketed)."""
    if not hostname:
        return False
    if hostname == "localhost" or hostname.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, str] | None:
    """``(name, port)`` of a ``Host`` header value, lower-cased (``port`` may be empty); None when
    it is not a host name, an IPv4 address or a bracketed IPv6 address with an optional port."""
    value = value.strip().lower()
    if value.startswith("["):
        address, closed, rest = value[1:].partition("]")
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return None
        if not closed or (rest and rest[0] != ":"):
            return None
        name, port = f"[{address}]", rest[1:]
    else:
        name, _, port = value.partition(":")
        if not name or not all(c.isalnum() or c in "-._" for c in name):
            return None
    return (name, port) if port == "" or port.isdigit() else None
