"""One way to be a service: what the gateway (``aiod``), the browser program (``agentbox-browser``),
MCP mode (``agentbox-mcp-mode``) and API mode (``agentbox-api``) do alike around their own routes.

* :func:`run`: logging configured, the settings loaded and the app built (a
  :class:`ConfigError` from either stops the program before it binds: ``<prog>: refusing to start:
  <why>`` on stderr and exit status 2, a usage error, as argparse and uvicorn exit for theirs),
  then served (:func:`serve`: bounded connections, no access log of uvicorn's own);
* :func:`as_service`: the one builder every program's app goes through once its own routes and
  guards are in place: its public health answer (:func:`health_route`), its lifespan from its
  parts (:func:`lifespan`), and ``/metrics`` with the access log outermost (:func:`observe`);
* :func:`mcp_endpoint`: every MCP endpoint's one ``Accept`` rule: a request with no ``Accept``, or
  only blank ones, is served as ``Accept: */*`` (what HTTP says an absent header means; Python's
  urllib and hand-written clients send none) instead of the SDK's 406.

Each program's version is :data:`agentbox_common.version.__version__`, the string its package
metadata is built from."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .logging import configure_logging, redact
from .observability import ObservabilitySettings
from .serving import connection_limits, serve, server
from .settings import ConfigError

if TYPE_CHECKING:
    from prometheus_client.core import Metric

    from .observability.metrics import Metrics

#: The exit status of a program refused to start for its configuration (argparse's and uvicorn's).
CONFIG_ERROR_STATUS = 2


class Served(Protocol):
    """Settings naming where the program listens."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


S = TypeVar("S", bound=Served)
T = TypeVar("T")
App = TypeVar("App", bound=Starlette)


def refusal(prog: str, error: ConfigError) -> str:
    """What a program refused its configuration says: the variable, never a secret's value."""
    return f"{prog}: refusing to start: {redact(str(error))}"


def refuse_to_start(prog: str, error: ConfigError) -> NoReturn:
    """Stop a program whose configuration is wrong (exit status 2)."""
    print(refusal(prog, error), file=sys.stderr)
    sys.exit(CONFIG_ERROR_STATUS)


def load_or_exit(prog: str, load: Callable[[], T]) -> T:
    """``load()``, or :func:`refuse_to_start` on its :class:`ConfigError`."""
    try:
        return load()
    except ConfigError as exc:
        refuse_to_start(prog, exc)


def run(
    prog: str,
    load: Callable[[], S],
    build: Callable[[S], ASGIApp],
    *,
    live_while_starting: LiveWhileStarting | None = None,
) -> None:
    """A program's ``main`` after its arguments are parsed: logging, settings, app, served at the
    settings' host and port until stopped. ``build`` runs once the settings are good (a program
    imports its heavy parts there) and may refuse them too (raising :class:`ConfigError`).

    With ``live_while_starting`` the program binds before it builds, answering its liveness probe
    meanwhile (:mod:`agentbox_common.starting`); a refusal from ``build`` still exits with 2."""
    configure_logging()
    settings = load_or_exit(prog, load)
    limits = load_or_exit(prog, connection_limits)
    if live_while_starting is None:
        app = load_or_exit(prog, lambda: build(settings))
        serve(app, settings.host, settings.port, limits)
        return
    from .starting import StartingApp  # imports this module

    status: list[int] = []

    def stop(code: int) -> None:
        status.append(code)
        uvicorn_server.should_exit = True

    starting = StartingApp(
        prog,
        preload=live_while_starting.preload,
        build=lambda: build(settings),
        health=live_while_starting.health,
        stop=stop,
    )
    uvicorn_server = server(starting, settings.host, settings.port, limits)
    uvicorn_server.run()
    if status:
        sys.exit(status[0])


@dataclasses.dataclass(frozen=True)
class LiveWhileStarting:
    """How a program is live before its app exists: ``health()`` is its liveness answer (the one
    its built app gives), ``preload()`` imports what ``build`` needs (run in a worker thread)."""

    health: Callable[[], Mapping[str, Any]]
    preload: Callable[[], object]


def health_route(answer: Callable[[], Mapping[str, Any]], path: str = "/health") -> Route:
    """``GET <path>``: 200 with ``answer()`` as JSON. Public (each program's guard lets it through)
    and cheap: ``answer`` reads what is at hand and asks nothing else."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(dict(answer()))

    return Route(path, health, methods=["GET"])


class _DefaultAccept:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope.get("headers", [])
            if not any(name == b"accept" and value.strip() for name, value in headers):
                kept = [(name, value) for name, value in headers if name != b"accept"]
                scope = {**scope, "headers": [*kept, (b"accept", b"*/*")]}
        await self.app(scope, receive, send)


def mcp_endpoint(app: ASGIApp) -> ASGIApp:
    """``app``, an MCP endpoint, with the one ``Accept`` rule: none, or only blank ones, is ``*/*``."""
    return _DefaultAccept(app)


def lifespan(
    *parts: Callable[[], AbstractAsyncContextManager[Any]],
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """A Starlette lifespan entering each part in order (an MCP session manager's ``run``, a
    program's own start and stop) and leaving them in reverse, also when one fails to start."""

    @contextlib.asynccontextmanager
    async def entered(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for part in parts:
                await stack.enter_async_context(part())
            yield

    return entered


def observe(
    app: App,
    service_name: str,
    settings: ObservabilitySettings,
    *,
    guard: Callable[[ASGIApp], ASGIApp] | None = None,
    collectors: Iterable[Callable[[], Iterable[Metric]]] = (),
) -> App:
    """``/metrics`` (when on; behind ``guard`` where the app's auth is not a middleware) with the
    program's own gauges (``collectors``, read at scrape time), the access log and, with
    ``OTEL_EXPORTER_OTLP_ENDPOINT``, traces: call it after every other ``add_middleware``."""
    metrics: Metrics | None = settings.install(app, service_name, guard=guard)
    if metrics is not None:
        for collect in collectors:
            metrics.add_collector(collect)
    return app


def as_service(
    app: App,
    service_name: str,
    observability: ObservabilitySettings,
    *,
    health: Callable[[], Mapping[str, Any]],
    health_path: str = "/health",
    parts: Iterable[Callable[[], AbstractAsyncContextManager[Any]]] = (),
    guard: Callable[[ASGIApp], ASGIApp] | None = None,
    collectors: Iterable[Callable[[], Iterable[Metric]]] = (),
) -> App:
    """``app`` (its routes and guards in place) made a service as every program is: ``GET
    <health_path>`` answering ``health()``, first of its routes; its lifespan entering ``parts`` in
    order; then :func:`observe` (``guard``, ``collectors``), outermost."""
    app.router.routes.insert(0, health_route(health, health_path))
    app.router.lifespan_context = lifespan(*parts)
    return observe(app, service_name, observability, guard=guard, collectors=collectors)
