"""The agentbox gateway: the sandbox's MCP endpoint, REST API and CDP proxy (``aiod``)."""

__version__ = "0.1.0"
