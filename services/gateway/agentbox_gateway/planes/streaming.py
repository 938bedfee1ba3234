"""How a plane hands out output while a long operation still runs (the doors turn it into MCP
progress notifications or SSE events)."""

from collections.abc import Awaitable, Callable

#: Receives each new chunk of output, in order, while the operation runs; an exception it raises
#: (the client went away) stops the operation.
OutputSink = Callable[[str], Awaitable[None]]
