"""The gateway's own gauges for ``/metrics``, read from the planes and the upstream router at
scrape time: open shell and code sessions, and whether each registered upstream answers."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client.core import GaugeMetricFamily, Metric

from .planes import Planes
from .upstreams import UpstreamRouter


def gateway_collector(planes: Planes, upstreams: UpstreamRouter) -> Callable[[], Iterable[Metric]]:
    def collect() -> Iterable[Metric]:
        yield GaugeMetricFamily("agentbox_shell_sessions", "Open shell sessions.", value=len(planes.shell.sessions()))
        yield GaugeMetricFamily(
            "agentbox_code_sessions", "Open code interpreter sessions.", value=planes.code_session_count
        )
        up = GaugeMetricFamily(
            "agentbox_upstream_up",
            "1 while a registered upstream MCP server answers, 0 after it failed to (absent until first contacted).",
            labels=["upstream"],
        )
        for name, answers in upstreams.health().items():
            up.add_metric([name], 1.0 if answers else 0.0)
        yield up

    return collect
