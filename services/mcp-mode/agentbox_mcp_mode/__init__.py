"""aicodebox MCP mode and API mode: a coding agent and its workspace as MCP tools and HTTP routes."""
