"""Optional OpenTelemetry traces (issue 20): with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, ``aiod start``
exports a span per request to an OTLP/HTTP collector (a fake one on loopback here, decoding what it
receives with OpenTelemetry's own protobuf types); without it, OpenTelemetry's SDK, exporter and ASGI
instrumentation are not even imported (the MCP SDK itself imports only the no-op API)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from mcp.server import Server
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentbox_common.observability.tracing import untraced
from tests.support import shared_http
from tests.support.servers import console_script, free_port, run_command, serve_app


def collector(received: list[ExportTraceServiceRequest]) -> Starlette:
    async def traces(request: Request) -> Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.body())
        received.append(message)
        return Response(b"", media_type="application/x-protobuf")

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])


def test_spans_reach_the_collector(tmp_path: Path) -> None:
    received: list[ExportTraceServiceRequest] = []
    with serve_app(collector(received)) as otlp:
        port = free_port()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "OTEL_BSP_SCHEDULE_DELAY": "100", "HOME": str(tmp_path)}
        base = f"http://127.0.0.1:{port}"
        with run_command([console_script("aiod"), "start", "--port", str(port)], env, f"{base}/health"):
            assert shared_http.get(f"{base}/v1/sandbox", headers={"x-request-id": "traced-1"}).status_code == 200
            deadline = time.monotonic() + 20
            while not received and time.monotonic() < deadline:
                time.sleep(0.1)
    assert received, "no span was exported"
    spans = [
        (resource.resource, span)
        for message in received
        for resource in message.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    services = {
        attr.value.string_value for resource, _ in spans for attr in resource.attributes if attr.key == "service.name"
    }
    assert services == {"agentbox-gateway"}
    assert any(span.name.startswith("GET") and "/v1/sandbox" in span.name for _, span in spans), [
        span.name for _, span in spans
    ]


def test_tool_calls_have_the_mcp_sdks_span_when_tracing(tmp_path: Path) -> None:
    received: list[ExportTraceServiceRequest] = []
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sandbox_get_context"}}
    with serve_app(collector(received)) as otlp:
        port = free_port()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "OTEL_BSP_SCHEDULE_DELAY": "100", "HOME": str(tmp_path)}
        base = f"http://127.0.0.1:{port}"
        with run_command([console_script("aiod"), "start", "--port", str(port)], env, f"{base}/health"):
            assert shared_http.post(f"{base}/mcp", json=call, headers={"Accept": "application/json"}).status_code == 200
            deadline = time.monotonic() + 20
            names: list[str] = []
            while "tools/call sandbox_get_context" not in names and time.monotonic() < deadline:
                time.sleep(0.1)
                names = [
                    span.name for m in received for r in m.resource_spans for sc in r.scope_spans for span in sc.spans
                ]
    assert "tools/call sandbox_get_context" in names, names


def test_without_tracing_the_mcp_sdks_span_middleware_is_dropped_and_nothing_else() -> None:
    server = Server("probe")
    kept = object()
    server.middleware.append(kept)  # type: ignore[arg-type]
    untraced(server)
    assert server.middleware == [kept]


def test_not_imported_without_an_endpoint() -> None:
    probe = (
        "import sys\n"
        "from agentbox_gateway.app import build_app\n"
        "from agentbox_gateway.settings import GatewaySettings\n"
        "build_app(GatewaySettings.from_env({}))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter',"
        " 'opentelemetry.instrumentation'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"
