"""Aggregation of other MCP servers (``EXTRA_MCP_SERVERS`` / ``--mcp-servers``)."""

from .forwarding import UpstreamCallForwarder
from .router import UpstreamRouter

__all__ = ["UpstreamCallForwarder", "UpstreamRouter"]
