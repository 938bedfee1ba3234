"""Aggregation of other MCP servers (``EXTRA_MCP_SERVERS`` / ``--mcp-servers``): their
configuration, the client speaking to each, the router that lists and calls their tools, and the
watch telling listeners when their lists change.

A gateway package, not part of the MCP door: the REST door reads it too (``/v1/mcp/servers``), and
so do ``/ready``, ``/metrics`` and ``aiod doctor``. What only the MCP door does with an upstream
(answering a ``tools/call`` for one on the fast path) is the door's ``doors/mcp/forwarding.py``."""

from .router import UpstreamRouter

__all__ = ["UpstreamRouter"]
