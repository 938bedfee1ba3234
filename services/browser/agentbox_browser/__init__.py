"""Browser program: Chromium under supervision, Playwright over CDP, and the page-level
browser_* MCP tools."""

from agentbox_common.version import __version__

__all__ = ["__version__"]
