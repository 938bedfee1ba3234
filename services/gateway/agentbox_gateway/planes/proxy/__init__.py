"""The proxy plane: the browser's upstream proxy, mappings and excludes, applied through a PAC file
and a local forwarder."""

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
