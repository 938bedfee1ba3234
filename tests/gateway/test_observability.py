"""Operator basics of the gateway (issue 20): ``/metrics`` after known traffic, the request id on
every answer and towards upstreams, and one access-log line per request without credentials."""

from __future__ import annotations

import io
import json
import logging
from dataclasses import replace

import pytest

from agentbox_common.logging import JsonFormatter, RedactSecrets
from agentbox_common.observability import ObservabilitySettings
from agentbox_common.redaction import redact_query
from agentbox_gateway.app import build_app
from agentbox_gateway.settings import GatewaySettings
from tests.gateway.upstreams.test_aggregation_fakes import HeaderRecorder, tool, upstream_app
from tests.support import shared_http
from tests.support.jsonrpc import call_tool, rpc
from tests.support.metrics import has, scrape, value
from tests.support.servers import serve_app

KEY = "obs-key-0f3e9a7c51"


def test_metrics_count_known_traffic(gateway: str) -> None:
    mcp = f"{gateway}/mcp"
    for _ in range(3):
        assert not call_tool(mcp, "sandbox_execute_bash", {"cmd": "echo hi"}).get("isError")
    assert call_tool(mcp, "sandbox_execute_bash", {})["isError"] is True
    unknown = rpc(mcp, "tools/call", {"name": "no_such_tool", "arguments": {}}).json()
    assert unknown["error"]["code"] == -32602
    assert shared_http.get(f"{gateway}/v1/sandbox").status_code == 200
    assert shared_http.get(f"{gateway}/no/such/path/7d1").status_code == 404

    found = scrape(gateway)
    assert value(found, "agentbox_mcp_tool_calls_total", tool="sandbox_execute_bash", outcome="ok") == 3
    assert value(found, "agentbox_mcp_tool_calls_total", tool="sandbox_execute_bash", outcome="is_error") == 1
    assert value(found, "agentbox_mcp_tool_calls_total", tool="<unknown>", outcome="jsonrpc_error") == 1
    assert value(found, "agentbox_http_requests_total", method="POST", route="/mcp", status="200") == 5
    assert value(found, "agentbox_http_requests_total", method="GET", route="/v1/sandbox", status="200") == 1
    # an unmatched path folds into one label: no path of it becomes a label value
    assert value(found, "agentbox_http_requests_total", method="GET", route="unmatched", status="404") == 1
    assert not any("/no/such" in str(labels) for _, labels in found)
    # histograms: buckets for requests and tool calls, counts agreeing with the counters
    assert value(found, "agentbox_http_request_duration_seconds_count", method="POST", route="/mcp") == 5
    assert value(found, "agentbox_http_request_duration_seconds_bucket", method="POST", route="/mcp", le="+Inf") == 5
    assert value(found, "agentbox_mcp_tool_call_duration_seconds_count", tool="sandbox_execute_bash") == 4
    assert has(found, "agentbox_mcp_tool_call_duration_seconds_bucket", tool="sandbox_execute_bash", le="0.005")
    assert value(found, "agentbox_shell_sessions") >= 1
    assert has(found, "agentbox_code_sessions")


def test_metrics_need_the_key(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as base:
        refused = shared_http.get(f"{base}/metrics")
        assert refused.status_code == 401
        assert "agentbox_" not in refused.text
        assert shared_http.get(f"{base}/metrics", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_metrics_off(gateway_settings: GatewaySettings) -> None:
    settings = replace(gateway_settings, observability=ObservabilitySettings(metrics=False))
    with serve_app(build_app(settings)) as base:
        assert shared_http.get(f"{base}/metrics").status_code == 404
        assert "x-request-id" in shared_http.get(f"{base}/health").headers


@pytest.mark.parametrize(
    ("presented", "echoed"),
    [("req-42.a:b_c", True), ("x" * 129, False), ("has space", False), ("ünïcode", False), (None, False)],
)
def test_request_id_echoed_or_generated(gateway: str, presented: str | None, echoed: bool) -> None:
    headers = {"x-request-id": presented.encode("utf-8")} if presented is not None else {}
    answer = shared_http.get(f"{gateway}/health", headers=headers)
    request_id = answer.headers["x-request-id"]
    if echoed:
        assert request_id == presented
    else:
        assert request_id != presented and len(request_id) == 32 and request_id.isalnum()


def test_request_id_on_refusals(gateway_settings: GatewaySettings) -> None:
    with serve_app(build_app(replace(gateway_settings, api_key=KEY))) as base:
        answer = shared_http.post(f"{base}/mcp", json={}, headers={"x-request-id": "refused-1"})
        assert answer.status_code == 401
        assert answer.headers["x-request-id"] == "refused-1"


def test_request_id_reaches_upstreams(gateway_settings: GatewaySettings) -> None:
    recorder = HeaderRecorder(upstream_app("up", [tool("echo")]))
    with serve_app(recorder) as upstream:
        servers = {"up": {"url": f"{upstream}/mcp", "prefix": "up"}}
        with serve_app(build_app(replace(gateway_settings, mcp_servers=servers))) as base:
            rpc(f"{base}/mcp", "tools/list")
            answer = shared_http.post(
                f"{base}/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "up_echo"}},
                headers={"x-request-id": "trace-up-1", "Accept": "application/json, text/event-stream"},
            )
            assert answer.json()["result"]["content"][0]["text"].startswith("up:echo")
            found = scrape(base)
    assert recorder.requests[-1]["x-request-id"] == "trace-up-1"
    assert value(found, "agentbox_mcp_tool_calls_total", tool="up_echo", outcome="ok") == 1
    assert value(found, "agentbox_upstream_up", upstream="up") == 1


def test_upstream_down_is_zero(gateway_settings: GatewaySettings) -> None:
    servers = {"gone": {"url": "http://127.0.0.1:9/mcp", "prefix": "gone"}}
    with serve_app(build_app(replace(gateway_settings, mcp_servers=servers))) as base:
        rpc(f"{base}/mcp", "tools/list")
        found = scrape(base)
    assert value(found, "agentbox_upstream_up", upstream="gone") == 0
    assert has(found, "agentbox_upstream_up", upstream="gone")


def test_access_log_line_without_credentials(
    gateway_settings: GatewaySettings, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="agentbox.access"),
        serve_app(build_app(replace(gateway_settings, api_key=KEY))) as base,
    ):
        call_tool(
            f"{base}/mcp",
            "sandbox_execute_bash",
            {"cmd": "true"},
            headers={"Authorization": f"Bearer {KEY}", "x-request-id": "log-1"},
        )
        shared_http.get(f"{base}/v1/sandbox?api_key={KEY}&verbose=1", headers={"x-request-id": "log-2"})
        shared_http.get(f"{base}/v1/sandbox?ticket=abc123ticket", headers={"x-api-key": KEY})
    records = [r for r in caplog.records if r.name == "agentbox.access"]
    assert len(records) == 3
    formatted = [JsonFormatter().format(r) for r in records] + [r.getMessage() for r in records]
    assert not any(KEY in line or "abc123ticket" in line for line in formatted)
    mcp_line, query_line, ticket_line = (json.loads(JsonFormatter().format(r)) for r in records)
    assert mcp_line["request_id"] == "log-1" and mcp_line["tool"] == "sandbox_execute_bash"
    assert (mcp_line["method"], mcp_line["route"], mcp_line["status"]) == ("POST", "/mcp", 200)
    assert mcp_line["duration_ms"] > 0 and mcp_line["client"].startswith("127.0.0.1:")
    assert query_line["request_id"] == "log-2" and query_line["status"] == 200
    assert "api_key=[redacted len=18 sha256=" in query_line["query"] and "verbose=1" in query_line["query"]
    assert "ticket=[redacted len=12" in ticket_line["query"]
    assert "[redacted" in records[1].getMessage()


def test_access_log_off(gateway_settings: GatewaySettings, caplog: pytest.LogCaptureFixture) -> None:
    settings = replace(gateway_settings, observability=ObservabilitySettings(access_log=False))
    with caplog.at_level(logging.INFO, logger="agentbox.access"), serve_app(build_app(settings)) as base:
        shared_http.get(f"{base}/health")
    assert not [r for r in caplog.records if r.name == "agentbox.access"]


def test_bad_observability_variable_is_named() -> None:
    with pytest.raises(ValueError, match="AGENTBOX_METRICS"):
        GatewaySettings.from_env({"AGENTBOX_METRICS": "maybe"})


def test_log_lines_of_a_request_name_its_id(gateway_settings: GatewaySettings) -> None:
    """A JSON line logged while a request is served (here: an upstream that is down) carries its id."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)  # formats as the line is logged, as the services' handler does
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("agentbox_gateway")
    logger.addHandler(handler)
    servers = {"gone": {"url": "http://127.0.0.1:9/mcp", "prefix": "gone"}}
    try:
        with serve_app(build_app(replace(gateway_settings, mcp_servers=servers))) as base:
            call_tool(f"{base}/mcp", "gone_tool", {}, headers={"x-request-id": "warned-7"})
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert any(line.get("request_id") == "warned-7" and "gone" in line["message"] for line in lines), lines


def test_access_line_passes_the_log_filter_unchanged() -> None:
    """The access log redacts its query itself; the handlers' filter must not redact it twice."""
    line = f"GET /v1/sandbox?{redact_query(f'api_key={KEY}&x=1')} 200"
    record = logging.LogRecord("agentbox.access", logging.INFO, __file__, 1, line, None, None)
    RedactSecrets().filter(record)
    assert record.getMessage() == line and KEY not in line
