"""Aggregation of other MCP servers (``EXTRA_MCP_SERVERS`` / ``--mcp-servers``)."""

from .forwarding import UpstreamCalls
from .router import UpstreamRouter

__all__ = ["UpstreamCalls", "UpstreamRouter"]
