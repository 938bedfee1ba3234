"""Browser program: Chromium under supervision, Playwright over CDP, and the page-level
browser_* MCP tools."""

__version__ = "0.1.0"
