"""Counts of agent runs in this process, whichever door started them (MCP ``run_prompt``, ``/run``,
the OpenAI endpoint), for ``/metrics``. Plain integers: every change happens on the event loop's
thread or under the lock guard, and a scrape only reads them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric


@dataclass
class RunStats:
    started: int = 0
    finished: int = 0
    failed: int = 0
    busy_refused: int = 0

    @property
    def active(self) -> int:
        return self.started - self.finished - self.failed

    def collect(self) -> Iterable[Metric]:
        runs = CounterMetricFamily(
            "agentbox_agent_runs",
            "Agent runs by event: started, finished (succeeded), failed, "
            "busy_refused (the workspace or the run cap was taken).",
            labels=["event"],
        )
        for event in ("started", "finished", "failed", "busy_refused"):
            runs.add_metric([event], getattr(self, event))
        yield runs
        yield GaugeMetricFamily("agentbox_agent_runs_active", "Agent runs going on now.", value=self.active)


#: The process's counts.
RUN_STATS = RunStats()
