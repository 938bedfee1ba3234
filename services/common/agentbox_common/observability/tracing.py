"""Optional OpenTelemetry traces: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, every request becomes a
span exported over OTLP/HTTP (the exporter reads the standard ``OTEL_*`` variables itself: headers,
timeouts). The MCP SDK reports its own spans through the OpenTelemetry API, so tool calls show up
inside the request spans. Without the variable the SDK, exporter and instrumentation are never
imported, so a server that does not trace pays nothing, not even the import."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp

if TYPE_CHECKING:
    from mcp.server import Server


def traced(app: ASGIApp, service_name: str) -> ASGIApp:
    """``app`` wrapped in OpenTelemetry's ASGI middleware, exporting to the configured endpoint."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return OpenTelemetryMiddleware(app, tracer_provider=provider)


def untraced(server: Server) -> None:
    """Drop the MCP SDK's span per message (its ``OpenTelemetryMiddleware``, on by default: some
    10 µs of a built-in tool call) from a server in a process that exports no traces, where those
    spans are never recorded. The SDK's documented opt-out: remove it from ``Server.middleware``."""
    from mcp.server._otel import OpenTelemetryMiddleware

    server.middleware[:] = [layer for layer in server.middleware if not isinstance(layer, OpenTelemetryMiddleware)]
