"""aicodebox API mode: ``/run``, ``/files``, the OpenAI-compatible endpoint and the in-process MCP mount."""
