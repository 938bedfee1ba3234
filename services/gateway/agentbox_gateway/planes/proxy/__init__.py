"""The proxy plane: the browser's upstream proxy, mappings and excludes, applied through a PAC file
and a local forwarder."""

from .plane import Applied, Diagnosis, MappingInfo, ProxyPlane, ProxyUnavailable, UpstreamInfo
from .rules import MASK, ProxyEntryNotFound, ProxySettingError

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
