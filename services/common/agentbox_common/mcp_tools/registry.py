"""A server's tools: each a name, a description, an input JSON Schema and an async handler. The
registry checks a call's arguments (:mod:`.arguments`) and is the one place a tool's failure
becomes its ``isError`` result, so that no failing tool can take its server down:

* :class:`ToolError`: its own result (the message, its structured content or JSON payload);
* :class:`~agentbox_common.errors.PlaneError`: its message, and its hint on a second line;
* anything else: logged, and ``<tool> failed: <type>: <message>``.

A handler that needs to know about its call (the HTTP request it came with, where to send output
while it runs) takes a second parameter, the server's call context, handed to it explicitly as the
SDK hands its own handlers ``ctx``: a typed value the server builds per call (``build_server``'s
``call_context``), never part of the tool's input schema. A handler of the arguments alone is
called without it."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from mcp import types

from agentbox_common.errors import PlaneError

from .arguments import ArgumentCheck
from .results import ErrorResult, ToolError, error_result, plane_error_text

logger = logging.getLogger(__name__)

Arguments = dict[str, Any]
C = TypeVar("C")
#: What runs a tool: the checked arguments in, the result out.
Handler = Callable[[Arguments], Awaitable[types.CallToolResult]]
#: What runs a tool that reads its call: the checked arguments and the server's call context.
ContextHandler = Callable[[Arguments, C], Awaitable[types.CallToolResult]]
H = TypeVar("H", covariant=True)


@dataclass(frozen=True)
class ToolSpec(Generic[H]):
    """A published tool. The registry takes specs with a :data:`Handler`; a server whose tools need
    more (the browser program's session) declares them with its own handler type and binds them."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: H
    output_schema: dict[str, Any] | None = None
    #: What the arguments are checked against when it is wider than ``input_schema``: a tool can
    #: publish a schema strict clients accept and still take what older clients send.
    accepts: dict[str, Any] | None = None
    #: The description as of now, for a tool whose description names what the sandbox holds (cheap:
    #: called on every ``tools/list``); ``None``: always ``description``.
    describe: Callable[[], str] | None = None
    #: The tool's ``_meta`` (an MCP App's ``{"ui": {"resourceUri": ...}}``).
    meta: dict[str, Any] | None = None

    def to_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.describe() if self.describe is not None else self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            meta=self.meta,
        )


class ToolRegistry(Generic[C]):
    """Tools in their published order, called with a call context of type ``C``. ``error_result``
    shapes every ``isError`` answer (MCP mode adds its structured ``result`` copy of the text)."""

    def __init__(
        self,
        specs: Iterable[ToolSpec[Handler | ContextHandler[C]]],
        *,
        error_result: ErrorResult = error_result,
    ) -> None:
        self._specs: dict[str, ToolSpec[Any]] = {}
        self._handlers: dict[str, ContextHandler[C]] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise ValueError(f"duplicate tool {spec.name}")
            self._specs[spec.name] = spec
            self._handlers[spec.name] = _with_context(spec.handler)
        self._tools = [spec.to_tool() for spec in self._specs.values()]
        self._checks = {name: ArgumentCheck(spec.accepts or spec.input_schema) for name, spec in self._specs.items()}
        self._error_result = error_result

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    @property
    def names(self) -> list[str]:
        return list(self._specs)

    def tools(self) -> list[types.Tool]:
        return [
            spec.to_tool() if spec.describe is not None else tool
            for spec, tool in zip(self._specs.values(), self._tools, strict=True)
        ]

    def input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self._specs.get(name)
        return spec.input_schema if spec is not None else None

    async def call(self, name: str, arguments: Arguments | None, context: C) -> types.CallToolResult:
        handler = self._handlers[name]
        try:
            return await handler(self._checks[name](arguments), context)
        except ToolError as exc:
            return exc.to_result(self._error_result)
        except PlaneError as exc:
            return self._error_result(plane_error_text(exc), None)
        except Exception as exc:  # a failing tool never takes the server down
            logger.exception("tool %s failed", name)
            return self._error_result(f"{name} failed: {type(exc).__name__}: {exc}", None)


def _with_context(handler: Handler | ContextHandler[C]) -> ContextHandler[C]:
    """``handler`` as the registry calls it: with the call context, which a handler of one
    parameter (the arguments) does not take."""
    positional = [
        parameter
        for parameter in inspect.signature(handler).parameters.values()
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) >= 2:
        return cast("ContextHandler[C]", handler)
    plain = cast(Handler, handler)

    async def without_context(arguments: Arguments, context: C) -> types.CallToolResult:
        return await plain(arguments)

    return without_context
