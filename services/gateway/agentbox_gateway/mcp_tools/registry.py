"""The built-in tool registry: each tool is a name, a description, an input JSON Schema and an
async handler. Arguments are checked against the schema here, once for every tool, so a missing
or mistyped argument is an ``isError`` result naming it (``cmd is required``).

Schemas are closed (``additionalProperties: false``) and say "optional" only by leaving a field
out of ``required``, never with a ``null`` type, which strict clients (OpenAI's, Gemini's) refuse.
Models still often send every field, unused ones as null: a null is taken as an omitted field."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.protocols
from mcp import types

from agentbox_common.errors import PlaneError
from agentbox_common.tool_arguments import describe_invalid_arguments

from .results import ToolError, plane_error_text, text_result

logger = logging.getLogger(__name__)

#: The HTTP request a tool call arrived with (set by the MCP door; None elsewhere), for the tools
#: whose answer depends on how the caller reaches the gateway (``browser_get_info``'s ``cdp_url``,
#: ``sandbox_get_context``'s preview URLs).
current_request: ContextVar[Any] = ContextVar("current_request", default=None)

Handler = Callable[[dict[str, Any]], Awaitable[types.CallToolResult]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler

    def to_tool(self) -> types.Tool:
        return types.Tool(name=self.name, description=self.description, input_schema=self.input_schema)


def without_nulls(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the fields (also of nested objects) whose value is null."""
    return {k: without_nulls(v) if isinstance(v, dict) else v for k, v in arguments.items() if v is not None}


def check_arguments(validator: jsonschema.protocols.Validator, arguments: dict[str, Any]) -> None:
    """Raise :class:`ToolError` with a short, model-readable message when arguments break the schema."""
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (e.validator != "required", e.path))
    if errors:
        raise ToolError(describe_invalid_arguments(errors[0]))


class ToolRegistry:
    """Built-in tools in their published order."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"duplicate built-in tool {spec.name}")
            self._specs[spec.name] = spec
        self._tools = [spec.to_tool() for spec in self._specs.values()]
        self._validators = {
            name: jsonschema.Draft202012Validator(spec.input_schema) for name, spec in self._specs.items()
        }

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def tools(self) -> list[types.Tool]:
        return list(self._tools)

    def input_schema(self, name: str) -> dict[str, Any]:
        return self._specs[name].input_schema

    async def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        spec = self._specs[name]
        args = without_nulls(arguments or {})
        try:
            check_arguments(self._validators[name], args)
            return await spec.handler(args)
        except ToolError as exc:
            return exc.to_result()
        except PlaneError as exc:
            return text_result(plane_error_text(exc), is_error=True)
        except Exception as exc:  # a failing tool never takes the server down
            logger.exception("tool %s failed", name)
            return text_result(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
