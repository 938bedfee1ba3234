"""What an operator turns on: ``/metrics``, the access log and traces. Apart from the middleware
so that a program reads its settings without importing Prometheus (before it answers ``/health``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.types import ASGIApp

from ..settings import boolean, load, present, setting

if TYPE_CHECKING:
    from .metrics import Metrics


@dataclass(frozen=True)
class ObservabilitySettings:
    #: Serve ``/metrics`` and count requests.
    metrics: bool = setting(True, env="AGENTBOX_METRICS", parse=boolean)
    #: One log line per request on the ``agentbox.access`` logger.
    access_log: bool = setting(True, env="AGENTBOX_ACCESS_LOG", parse=boolean)
    #: Set: export a span per request over OTLP/HTTP.
    traces: bool = setting(False, env="OTEL_EXPORTER_OTLP_ENDPOINT", parse=present, shown="unset")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ObservabilitySettings:
        return load(cls, env)

    def install(
        self, app: Starlette, service_name: str, guard: Callable[[ASGIApp], ASGIApp] | None = None
    ) -> Metrics | None:
        """Serve ``/metrics`` (when on; wrapped in ``guard`` where the app's auth is not a middleware)
        and wrap ``app`` in the middleware, outermost: call it after every other ``add_middleware``.
        Returns the metrics, for app-specific collectors."""
        from .metrics import Metrics, metrics_route
        from .middleware import ObservabilityMiddleware

        metrics = Metrics() if self.metrics else None
        if metrics is not None:
            app.router.routes.insert(0, metrics_route(metrics, guard))
        app.add_middleware(ObservabilityMiddleware, metrics=metrics, access_log=self.access_log)
        if self.traces:
            from .tracing import traced

            app.add_middleware(traced, service_name=service_name)
        return metrics
