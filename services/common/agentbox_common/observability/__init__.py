"""What an operator watches, shared by the gateway, MCP mode and API mode: request ids, Prometheus
metrics and one access-log line per request, all from one ASGI middleware
(:class:`ObservabilityMiddleware`). Doors report the MCP tool a request called with
:func:`note_tool_call`; the middleware turns that into the tool metrics and the log line."""

from .metrics import Metrics, metrics_route
from .middleware import ObservabilityMiddleware, ObservabilitySettings
from .request_ids import REQUEST_ID_HEADER, current_request_id
from .tool_calls import ToolOutcome, note_tool_call

__all__ = [
    "REQUEST_ID_HEADER",
    "Metrics",
    "ObservabilityMiddleware",
    "ObservabilitySettings",
    "ToolOutcome",
    "current_request_id",
    "metrics_route",
    "note_tool_call",
]
