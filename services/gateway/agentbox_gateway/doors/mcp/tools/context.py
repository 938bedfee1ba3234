"""``sandbox_get_context``, ``sandbox_get_packages`` and ``sandbox_load_skill`` over the context plane."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp import types

from ....planes.context import LANGUAGES, SandboxContext
from ...shared.addresses import gateway_base
from ..apps import PREVIEW_URI, open_previews, tool_meta
from .registry import BuiltinSpec, ToolContext, ToolSpec
from .results import json_result, text_result

if TYPE_CHECKING:
    from ....planes import Planes

CONTEXT_DESCRIPTION = (
    "Get the sandbox's environment: version, home directory, user, OS, timezone, occupied ports, "
    "runtimes (Python, Node.js) with versions and paths, available command-line tools, the workspace, and "
    "previews: for each port an app you started listens on (the sandbox's own services left out), "
    "preview_url, the link a person opens in a "
    "browser (the app on an origin of its own; with a key set the person opens it from the dashboard, or "
    "POST /tickets/preview gives a signed link), and url/absproxy_url, the /proxy/{port}/ and "
    "/absproxy/{port}/ forms for programs (in a browser they run sandboxed). "
    "Call it first to learn where you are. Hosts that render MCP Apps show the previews beside the result."
)
PACKAGES_DESCRIPTION = (
    "List installed packages: Python packages of the sandbox's python3 (name==version) or global npm "
    "packages (name@version). Without a language, both."
)
SKILL_DESCRIPTION = (
    "Load a skill: a folder of instructions (SKILL.md) for a specific kind of task. Without a name, "
    "lists the available skills with their descriptions; with a name, returns that skill's base path "
    "and instructions."
)

CONTEXT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
PACKAGES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "language": {
            "type": "string",
            "enum": list(LANGUAGES),
            "description": "python or nodejs; omit for both",
        }
    },
    "additionalProperties": False,
}
SKILL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": "The skill's folder name; omit to list the skills",
        }
    },
    "additionalProperties": False,
}


def _context_json(snapshot: SandboxContext) -> dict[str, Any]:
    """What ``sandbox_get_context`` returns: the fields, plus AIO 1.x's ``info`` summary."""
    return {
        **snapshot.system(),
        "version": snapshot.version,
        "runtimes": snapshot.runtimes,
        "utils": snapshot.utils,
        "info": snapshot.summary(),
    }


def skill_description(names: list[str]) -> str:
    """The tool's description, naming the skills installed now (so ``tools/list`` changes, and
    listening clients hear of it, when one is added)."""
    return f"{SKILL_DESCRIPTION} Installed: {', '.join(names)}." if names else SKILL_DESCRIPTION


def tools(planes: Planes) -> list[BuiltinSpec]:
    context = planes.context
    local_base = gateway_base(planes.settings)

    async def get_context(args: dict[str, Any], call: ToolContext) -> types.CallToolResult:
        base = call.public_base(local_base)
        snapshot = await context.get_context(base)
        result = json_result(_context_json(snapshot))
        caller = call.request.scope if call.request is not None else None
        open_previews(result, caller, base, planes.settings.ticket_ttl, [p["port"] for p in snapshot.previews])
        return result

    async def get_packages(args: dict[str, Any]) -> types.CallToolResult:
        return text_result(await context.packages_text(args.get("language")))

    async def load_skill(args: dict[str, Any]) -> types.CallToolResult:
        return text_result(await context.load_skill(args.get("name")))

    return [
        ToolSpec("sandbox_get_context", CONTEXT_DESCRIPTION, CONTEXT_SCHEMA, get_context, meta=tool_meta(PREVIEW_URI)),
        ToolSpec("sandbox_get_packages", PACKAGES_DESCRIPTION, PACKAGES_SCHEMA, get_packages),
        ToolSpec(
            "sandbox_load_skill",
            SKILL_DESCRIPTION,
            SKILL_SCHEMA,
            load_skill,
            describe=lambda: skill_description(context.skill_names()),
        ),
    ]
