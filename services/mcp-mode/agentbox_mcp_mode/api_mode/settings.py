"""Configuration of aicodebox's API mode (``agentbox-api``), read once at start-up.

API mode reads the whole MCP-mode configuration (workspace, adapter, models, timeouts and, with
``AICODEBOX_MCP_MODE=1``, the MCP token and Host/Origin lists of the endpoint it mounts) plus its
own ``AICODEBOX_API_MODE_*`` variables. The two tokens are separate: ``AICODEBOX_API_MODE_TOKEN``
guards the API routes only and ``AICODEBOX_MCP_MODE_TOKEN`` the MCP endpoint only.

API mode serves the OpenAI-compatible model list, so an empty ``AICODEBOX_AVAILABLE_MODELS`` is a
configuration error: the program refuses to start instead of answering every client with 503.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentbox_common.settings import ConfigError, load, nonblank, number, port_number, setting

from ..settings import McpModeSettings

DEFAULT_PORT = 8080
#: How long an async run's result waits to be collected (aicodebox keeps them 6 h).
DEFAULT_RESULT_TTL = 6 * 3600.0


@dataclass(frozen=True)
class ApiModeSettings:
    #: The shared ``AICODEBOX_*`` configuration; ``mcp.mcp_mode`` says whether ``/mcp`` is mounted.
    mcp: McpModeSettings
    host: str = setting("0.0.0.0", env="AICODEBOX_API_MODE_HOST", parse=nonblank)
    port: int = setting(DEFAULT_PORT, env="AICODEBOX_API_MODE_PORT", parse=port_number)
    #: Empty means the API routes have no auth.
    token: str = setting("", env="AICODEBOX_API_MODE_TOKEN")
    #: Seconds an unread async result is kept.
    result_ttl: float = setting(DEFAULT_RESULT_TTL, env="AICODEBOX_API_MODE_RESULT_TTL", parse=number(minimum=1))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ApiModeSettings:
        """Settings from the environment; keyword overrides win when not None. Raises ConfigError."""
        source = os.environ if env is None else env
        mcp = McpModeSettings.from_env(source)
        if not mcp.available_models:
            raise ConfigError(
                "AICODEBOX_AVAILABLE_MODELS is empty: API mode needs at least one model "
                "(a comma-separated list, e.g. AICODEBOX_AVAILABLE_MODELS=sonnet,opus)"
            )
        return load(cls, source, mcp=mcp, **overrides)
