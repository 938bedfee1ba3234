"""What an operator watches, shared by the gateway, MCP mode and API mode: request ids, Prometheus
metrics and one access-log line per request, all from one ASGI middleware
(``middleware.ObservabilityMiddleware``, installed by :meth:`ObservabilitySettings.install`).
Doors report the MCP tool a request called with :func:`note_tool_call`; the middleware turns that
into the tool metrics and the log line. Only the light parts are imported here: Prometheus is loaded
when the middleware is installed, not when a program reads its settings or logs."""

from .request_ids import REQUEST_ID_HEADER, current_request_id
from .settings import ObservabilitySettings
from .tool_calls import ToolOutcome, note_tool_call

__all__ = ["REQUEST_ID_HEADER", "ObservabilitySettings", "ToolOutcome", "current_request_id", "note_tool_call"]
