"""Prometheus metrics of one server, in a registry of its own (so several apps in one process, as in
the tests, never collide), rendered at ``GET /metrics`` in the text exposition format.

Labels are bounded: the route is the matched route's template (``/v1/shell/sessions/{session_id}``),
every unmatched path is ``unmatched``, and tool names past :data:`MAX_TOOL_LABELS` fold into
``other``. Gauges whose value lives in a plane (shell sessions, upstream health, agent runs) are read
at scrape time by collectors the app registers, so serving a request never pays for them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .tool_calls import ToolOutcome

# ``*_created`` series (one per label set) double a scrape's size and no dashboard reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated

#: Distinct tool names kept as labels; more (a client calling made-up names) fold into "other".
MAX_TOOL_LABELS = 512
UNMATCHED_ROUTE = "unmatched"
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class _ScrapeCollector(Collector):
    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        return self._collect()


class Metrics:
    """The counters and histograms every server has, plus app-specific collectors."""

    def __init__(self, namespace: str = "agentbox") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "http_requests",
            "HTTP requests and WebSocket sessions served, by method, route template and status.",
            ("method", "route", "status"),
            namespace=namespace,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "http_request_duration_seconds",
            "Time from a request's start to the end of its answer.",
            ("method", "route"),
            namespace=namespace,
            registry=self.registry,
            buckets=_LATENCY_BUCKETS,
        )
        self.tool_calls = Counter(
            "mcp_tool_calls",
            "MCP tools/call requests by tool and outcome (ok, is_error, jsonrpc_error).",
            ("tool", "outcome"),
            namespace=namespace,
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "mcp_tool_call_duration_seconds",
            "Time a tools/call took, by tool.",
            ("tool",),
            namespace=namespace,
            registry=self.registry,
            buckets=_LATENCY_BUCKETS,
        )
        self._tool_labels: set[str] = set()
        # Each label set's children, found once: ``labels()`` takes a lock and checks its arguments.
        self._request_series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._tool_series: dict[tuple[str, ToolOutcome], tuple[Counter, Histogram]] = {}

    def add_collector(self, collect: Callable[[], Iterable[Metric]]) -> None:
        """Register ``collect``, called at every scrape for values kept elsewhere."""
        self.registry.register(_ScrapeCollector(collect))

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        series = self._request_series.get(key)
        if series is None:
            series = (self.requests.labels(method, route, str(status)), self.request_seconds.labels(method, route))
            self._request_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def observe_tool_call(self, tool: str, outcome: ToolOutcome, seconds: float) -> None:
        if tool not in self._tool_labels:
            if len(self._tool_labels) >= MAX_TOOL_LABELS:
                tool = "other"
            else:
                self._tool_labels.add(tool)
        key = (tool, outcome)
        series = self._tool_series.get(key)
        if series is None:
            series = (self.tool_calls.labels(tool, outcome.value), self.tool_seconds.labels(tool))
            self._tool_series[key] = series
        series[0].inc()
        series[1].observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def metrics_route(metrics: Metrics, guard: Callable[[ASGIApp], ASGIApp] | None = None) -> Route:
    """``GET /metrics``: the registry in Prometheus text format, behind the app's auth (its
    middleware, or ``guard`` around this endpoint)."""

    endpoint = _MetricsEndpoint(metrics)
    return Route("/metrics", endpoint if guard is None else guard(endpoint), methods=["GET"])


class _MetricsEndpoint:
    """An ASGI app (not a function, so Starlette routes to it as one, guarded or not)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await Response(self.metrics.render(), media_type=CONTENT_TYPE_LATEST)(scope, receive, send)
