"""Agent adapters, chosen by ``AICODEBOX_ADAPTER``: ``claude`` (Claude Code CLI), ``codex`` (Codex
CLI), ``openai`` (the built-in agent on any OpenAI-compatible endpoint) or ``package.module:Class``
for a child image's own adapter (a subclass of :class:`~.base.Adapter` taking the settings).

``load_adapter(settings)`` raises ConfigError naming ``AICODEBOX_ADAPTER`` when the value cannot be
loaded, so a misconfigured process refuses to start instead of failing every run.
"""

from __future__ import annotations

import importlib

from agentbox_common.settings import ConfigError

from ..settings import McpModeSettings
from .base import Adapter, AgentEvent, AgentRequest, AgentRequestError, AgentResult
from .claude import ClaudeAdapter
from .codex import CodexAdapter
from .openai_agent import OpenAIAgentAdapter

BUILTIN_ADAPTERS: dict[str, type[Adapter]] = {
    "claude": ClaudeAdapter,
    "codex": CodexAdapter,
    "openai": OpenAIAgentAdapter,
}


def load_adapter(settings: McpModeSettings) -> Adapter:
    spec = settings.adapter
    if spec in BUILTIN_ADAPTERS:
        return BUILTIN_ADAPTERS[spec](settings)
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise ConfigError(
            f"AICODEBOX_ADAPTER={spec!r}: use one of {', '.join(BUILTIN_ADAPTERS)} or package.module:Class"
        )
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"AICODEBOX_ADAPTER={spec!r} cannot be loaded: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        raise ConfigError(f"AICODEBOX_ADAPTER={spec!r} is not an agentbox_mcp_mode Adapter subclass")
    adapter = cls(settings)
    if not adapter.name:
        adapter.name = spec
    return adapter


__all__ = ["Adapter", "AgentEvent", "AgentRequest", "AgentRequestError", "AgentResult", "load_adapter"]
