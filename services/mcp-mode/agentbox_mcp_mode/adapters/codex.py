"""Codex CLI adapter (``codex``), as codexbox drives it.

Command line: ``codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox``
plus ``--model``, ``-c instructions=…`` (system prompt), ``-c developer_instructions=…`` (appended
system prompt), ``-c model_reasoning_effort=…`` (``thinking``) and ``--output-schema <file>``; then
``resume <id>`` or ``resume --last`` to continue a session, and ``-`` (prompt on stdin) last. The
exec options come before the ``resume`` subcommand, where the CLI parser always accepts them.

``-c`` values are TOML; they are written as quoted TOML strings so any text survives intact.
codexbox adds ``--ephemeral`` for a fresh session, which leaves nothing to resume; it is left out
here because ``run_prompt`` hands back the session id precisely so a client can resume it.

Output is JSONL: ``thread.started`` carries the session (thread) id, each completed
``agent_message`` item is a piece of the answer (the last one is the final answer),
``turn.completed`` carries usage, ``turn.failed`` / ``error`` report failures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import AgentEvent, AgentRequest
from .cli_agent import CliAdapter, OutputParser

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def toml_string(value: str) -> str:
    """A TOML basic string (a JSON string literal is one: same quoting, same escapes)."""
    return json.dumps(value, ensure_ascii=False)


class CodexParser(OutputParser):
    def feed(self, event: dict[str, Any]) -> list[AgentEvent]:
        kind = event.get("type")
        if kind == "thread.started":
            return self.session(event.get("thread_id"))
        if kind == "item.completed":
            item = event.get("item") or {}
            if isinstance(item, dict) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                self.final_text = item["text"]
                return [AgentEvent("delta", text=item["text"])]
            return []
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            return [AgentEvent("usage", usage=event["usage"])]
        if kind == "turn.failed":
            error = event.get("error") or {}
            self.error = f"codex turn failed: {error.get('message') if isinstance(error, dict) else error}"
        elif kind == "error":
            self.error = f"codex error: {event.get('message')}"
        return []


class CodexAdapter(CliAdapter):
    name = "codex"
    default_binary = "codex"
    thinking_levels = REASONING_EFFORTS

    def build_argv(self, request: AgentRequest, scratch: Path) -> list[str]:
        argv = [
            self.binary,
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
        ]
        if request.model:
            argv += ["--model", request.model]
        if request.system_prompt:
            argv += ["-c", f"instructions={toml_string(request.system_prompt)}"]
        if request.append_system_prompt:
            argv += ["-c", f"developer_instructions={toml_string(request.append_system_prompt)}"]
        if request.thinking:
            argv += ["-c", f"model_reasoning_effort={toml_string(request.thinking)}"]
        if request.json_schema is not None:
            schema_file = scratch / "output-schema.json"
            schema_file.write_text(json.dumps(request.json_schema), encoding="utf-8")
            argv += ["--output-schema", str(schema_file)]
        if request.resume:
            argv += ["resume", request.resume]
        elif not request.no_continue:
            argv += ["resume", "--last"]
        argv.append("-")
        return argv

    def parser(self) -> OutputParser:
        return CodexParser()
