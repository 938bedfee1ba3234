"""The MCP door (``/mcp``): the server (``server``), its HTTP edge (``edge``), the fast path for
``tools/call`` (``fast_path``, and ``forwarding`` for upstream tools), progress over SSE
(``streaming``) and the built-in tools (``tools/``, one module per plane).

The paths a ``tools/call`` can take::

    POST /mcp
     |  edge.McpEdge: no Accept reads as */*; every refusal is a JSON-RPC error object
     v
    fast_path.ToolCallFastPath: a valid call (of any size the door takes), no progress token for SSE
     |   +-- built-in name --> BuiltinCalls (the SDK's serve_one) --> tools/ --> plane
     |   +-- upstream name --> forwarding.UpstreamCalls --> UpstreamRouter --> upstream's /mcp
     |  anything else: other methods, unknown tools, chunked bodies, what the SDK refuses
     v
    streaming.ProgressSplitter: a progressToken and Accept: text/event-stream
     |   +-- SSE session manager --> server: progress notifications on the stream, then the result
     |  the rest
     v
    the SDK's streamable-HTTP app (JSON answers) --> server
         +-- built-in --> tools/ --> plane
         +-- upstream --> server.UpstreamTools --> UpstreamRouter --> upstream's /mcp

The upstream router, client and configuration stay a gateway package (``agentbox_gateway.upstreams``):
the REST door, ``/ready``, ``/metrics`` and ``aiod doctor`` read them too."""
