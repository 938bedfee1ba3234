"""The agentbox gateway: the sandbox's MCP endpoint, REST API and CDP proxy (``aiod``)."""

from agentbox_common.version import __version__

__all__ = ["__version__"]
