"""The built-in MCP tools, one module per plane; ``builtin_tools`` fixes the published order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import browser, code, computer, context, editor, files, shell
from .registry import BuiltinSpec

if TYPE_CHECKING:
    from ....planes import Planes


def builtin_tools(planes: Planes) -> list[BuiltinSpec]:
    """The ten built-ins in aiod's order: bash, code, files, editor, context, packages, skill,
    browser info, GUI screenshot, GUI action; then the computer's (its accessibility nodes and action
    batches) and agentbox's own terminal (an MCP App)."""
    return [
        *shell.tools(planes),
        *code.tools(planes),
        *files.tools(planes),
        *editor.tools(planes),
        *context.tools(planes),
        *browser.tools(planes),
        *computer.tools(planes),
        *shell.terminal_tools(planes),
    ]
