"""Aggregation of other MCP servers (``EXTRA_MCP_SERVERS`` / ``--mcp-servers``)."""

from .router import UpstreamRouter

__all__ = ["UpstreamRouter"]
