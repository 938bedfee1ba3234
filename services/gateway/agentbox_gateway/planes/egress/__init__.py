"""The egress plane: the browser's outbound proxy (its upstream proxy, mappings and excludes),
applied through a PAC file and a local forwarder. Not the inbound preview relay
(``doors/relays/preview.py``), which passes a caller's requests to an app in the sandbox."""

from .errors import ProxyEntryNotFound, ProxySettingError, ProxyUnavailable
from .plane import Applied, Diagnosis, MappingInfo, ProxyPlane, UpstreamInfo
from .rules import MASK

__all__ = [
    "MASK",
    "Applied",
    "Diagnosis",
    "MappingInfo",
    "ProxyEntryNotFound",
    "ProxyPlane",
    "ProxySettingError",
    "ProxyUnavailable",
    "UpstreamInfo",
]
