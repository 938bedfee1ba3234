"""Run an ASGI app with uvicorn the same way in every service, with bounded connections (see
:mod:`agentbox_common.protocols`) configured by ``AGENTBOX_HEADER_TIMEOUT``,
``AGENTBOX_BODY_TIMEOUT`` and ``AGENTBOX_MAX_CONNECTIONS``."""

from __future__ import annotations

from collections.abc import Mapping

import uvicorn
from starlette.types import ASGIApp

from .processes import hide_own_environment
from .protocols import ConnectionLimits, bounded_protocols, default_max_connections
from .settings import env_float, env_int


def connection_limits(env: Mapping[str, str] | None = None) -> ConnectionLimits:
    """Raises :class:`~agentbox_common.settings.ConfigError` for a bad value."""
    return ConnectionLimits(
        header_timeout=env_float("AGENTBOX_HEADER_TIMEOUT", 10.0, env, minimum=0.1),
        body_timeout=env_float("AGENTBOX_BODY_TIMEOUT", 30.0, env, minimum=0.1),
        max_connections=env_int("AGENTBOX_MAX_CONNECTIONS", default_max_connections(), env, minimum=2),
    )


def serve(app: ASGIApp, host: str, port: int, limits: ConnectionLimits | None = None) -> None:
    """``limits`` ``None``: read from the environment (a bad value raises ``ConfigError``; the
    programs read them first, through ``agentbox_common.service.run``)."""
    server(app, host, port, limits).run()


def server(app: ASGIApp, host: str, port: int, limits: ConnectionLimits | None = None) -> uvicorn.Server:
    """The uvicorn server :func:`serve` runs, for a program that stops it itself (``should_exit``)."""
    limits = limits if limits is not None else connection_limits()
    hide_own_environment()
    http, ws = bounded_protocols(limits)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        proxy_headers=False,
        timeout_graceful_shutdown=5,
        http=http,
        ws=ws,
    )
    return uvicorn.Server(config)
