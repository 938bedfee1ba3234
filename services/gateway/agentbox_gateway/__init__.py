"""The agentbox gateway: the sandbox's MCP endpoint, REST API and CDP proxy (``aiod``)."""

from agentbox_common.version import __version__

__all__ = ["__version__", "liveness"]


def liveness() -> dict[str, str]:
    """``GET /health``'s answer: cheap, asks nothing else (also given while the gateway starts)."""
    return {"status": "ok", "version": __version__}
