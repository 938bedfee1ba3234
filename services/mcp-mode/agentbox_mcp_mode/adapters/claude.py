"""Claude Code CLI adapter (``claude``), as claudebox drives it.

Command line: ``claude -p --output-format stream-json --verbose --permission-mode bypassPermissions``
plus ``--model``, ``--system-prompt`` (replaces Claude Code's default), ``--append-system-prompt``,
``--resume <id>`` or ``--continue`` (latest session in the working directory; without either a new
session starts), ``--effort <level>`` for ``thinking`` and ``--json-schema '<json>'``.

Output is NDJSON: ``system``/``init`` carries the session id, ``assistant`` messages carry text
blocks (streamed as deltas), and the closing ``result`` carries the final text (or
``structured_output`` when a schema was given), ``is_error``, the session id and usage.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import AgentEvent, AgentRequest
from .cli_agent import CliAdapter, OutputParser

#: ``--effort`` levels the CLI accepts.
EFFORT_LEVELS = ("low", "medium", "high", "max")


class ClaudeParser(OutputParser):
    def feed(self, event: dict[str, Any]) -> list[AgentEvent]:
        kind = event.get("type")
        if kind == "system":
            return self.session(event.get("session_id"))
        if kind == "assistant":
            message = event.get("message") or {}
            blocks = message.get("content") if isinstance(message, dict) else None
            return [
                AgentEvent("delta", text=block["text"])
                for block in blocks or []
                if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
            ]
        if kind == "result":
            events = self.session(event.get("session_id"))
            if isinstance(event.get("usage"), dict):
                events.append(AgentEvent("usage", usage=event["usage"]))
            structured = event.get("structured_output")
            if structured is not None:
                self.final_text = json.dumps(structured, ensure_ascii=False)
            elif isinstance(event.get("result"), str):
                self.final_text = event["result"]
            if event.get("is_error"):
                self.error = f"claude reported {event.get('subtype') or 'an error'}: {self.final_text}".strip()
            return events
        return []


class ClaudeAdapter(CliAdapter):
    name = "claude"
    default_binary = "claude"
    thinking_levels = EFFORT_LEVELS

    def build_argv(self, request: AgentRequest, scratch: Path) -> list[str]:
        argv = [
            self.binary,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
        ]
        if request.model:
            argv += ["--model", request.model]
        if request.system_prompt:
            argv += ["--system-prompt", request.system_prompt]
        if request.append_system_prompt:
            argv += ["--append-system-prompt", request.append_system_prompt]
        if request.resume:
            argv += ["--resume", request.resume]
        elif not request.no_continue:
            argv.append("--continue")
        if request.thinking:
            argv += ["--effort", request.thinking]
        if request.json_schema is not None:
            argv += ["--json-schema", json.dumps(request.json_schema, separators=(",", ":"))]
        return argv

    def parser(self) -> OutputParser:
        return ClaudeParser()
