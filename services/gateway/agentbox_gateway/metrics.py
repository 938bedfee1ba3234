"""The gateway's own gauges for ``/metrics``, read from the planes and the upstream router at
scrape time: open shell and code sessions, whether each registered upstream answers, and with
sandboxd on its running processes and the calls it answered."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .planes import Planes
from .upstreams import UpstreamRouter

if TYPE_CHECKING:
    from .doors.sandboxd.server import Sandboxd


def gateway_collector(
    planes: Planes, upstreams: UpstreamRouter, sandboxd: Sandboxd | None = None
) -> Callable[[], Iterable[Metric]]:
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
        if sandboxd is not None:
            yield GaugeMetricFamily(
                "agentbox_sandboxd_processes",
                "Processes started through sandboxd's ProcessService and still running.",
                value=planes.shell.programs.running,
            )
            calls = CounterMetricFamily(
                "agentbox_sandboxd_calls",
                "Calls sandboxd answered, by API (grpc, rest), method and status code.",
                labels=["api", "method", "code"],
            )
            for (api, method, code), count in sorted(sandboxd.calls.items()):
                calls.add_metric([api, method, code], count)
            yield calls

    return collect
