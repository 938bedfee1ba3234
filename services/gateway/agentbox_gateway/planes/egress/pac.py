"""The PAC file (proxy auto-config) Chromium reads: the same decision as :meth:`ProxyConfig.route`,
in JavaScript. Whatever is not direct goes to the local forwarder, which holds the credentials, so
the file names no upstream and no secret."""

from __future__ import annotations

import json

from .rules import ProxyConfig

_TEMPLATE = """\
// agentbox browser proxy settings. Generated; holds no credentials (the forwarder adds them).
var FORWARDER = {forwarder};
var UPSTREAM = {upstream};
var MAPPINGS = {mappings};
var EXCLUDED_HOSTS = {hosts};
var EXCLUDED_NETWORKS = {networks};

function FindProxyForURL(url, host) {{
  host = host.toLowerCase();
  var parts = /^([a-z][a-z0-9+.-]*):\\/\\/(?:\\[[^\\]]*\\]|[^\\/:?#]*)(?::(\\d+))?([^?#]*)/i.exec(url) || [];
  var scheme = (parts[1] || "").toLowerCase();
  var port = parts[2] ? parseInt(parts[2], 10) : (scheme === "https" || scheme === "wss" ? 443 : 80);
  if (scheme === "wss") scheme = "https";
  if (scheme === "ws") scheme = "http";
  var i;
  for (i = 0; i < MAPPINGS.length; i++) {{
    var m = MAPPINGS[i];
    if (shExpMatch(host, m.host) && (m.port === null || m.port === port) && (m.scheme === null || m.scheme === scheme))
      return FORWARDER;
  }}
  for (i = 0; i < EXCLUDED_HOSTS.length; i++) if (shExpMatch(host, EXCLUDED_HOSTS[i])) return "DIRECT";
  for (i = 0; i < EXCLUDED_NETWORKS.length; i++) if (isInNetEx(host, EXCLUDED_NETWORKS[i])) return "DIRECT";
  return UPSTREAM ? FORWARDER : "DIRECT";
}}
"""


def build_pac(config: ProxyConfig, forwarder: str) -> str:
    """The PAC text for ``config``; ``forwarder`` is the local forwarder's ``host:port``. A mapping is
    matched on host, port and scheme here (Chromium hides https paths from PAC); the forwarder then
    checks the path."""
    mappings = [{"host": m.host, "port": m.port, "scheme": m.scheme} for m in config.mappings]
    hosts = [pattern for exclude in config.excludes for pattern in exclude.hosts]
    networks = [str(exclude.network) for exclude in config.excludes if exclude.network is not None]
    return _TEMPLATE.format(
        forwarder=json.dumps(f"PROXY {forwarder}"),
        upstream=json.dumps(config.upstream is not None),
        mappings=json.dumps(mappings),
        hosts=json.dumps(hosts),
        networks=json.dumps(networks),
    )
