"""What every browser tool shares: its spec (name, description, input schema, handler), the
argument check, result shapes, and the one place where failures become ``isError`` results, so
that no failing page operation can take the server or the browser down."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from mcp import types
from playwright.async_api import Error as PlaywrightError

from agentbox_common.tool_arguments import describe_invalid_arguments

from ..session import BrowserSession, BrowserUnavailable, first_line

logger = logging.getLogger(__name__)

Arguments = dict[str, Any]
Handler = Callable[[BrowserSession, Arguments], Awaitable[types.CallToolResult]]


class ToolError(Exception):
    """The tool ran and failed for a reason the caller can act on; becomes an ``isError`` result."""


@dataclass(frozen=True)
class BrowserTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    output_schema: dict[str, Any] | None = None

    def to_tool(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
        )


def schema(properties: Mapping[str, Any] | None = None, required: Iterable[str] = ()) -> dict[str, Any]:
    """An object schema in the shape mcp-server-browser publishes (draft-07, no extra properties)."""
    result: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties or {}),
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    }
    if required:
        result["required"] = list(required)
    return result


def text_result(text: str, *, is_error: bool = False, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=is_error, structured_content=structured
    )


def image_result(text: str, png: bytes) -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=text),
            types.ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"),
        ]
    )


class ToolRegistry:
    """The browser tools in their published order, with one error policy for all of them."""

    def __init__(self, tools: Iterable[BrowserTool], session: BrowserSession, deadline: float) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._validators = {name: jsonschema.Draft7Validator(tool.input_schema) for name, tool in self._tools.items()}
        self._listed = [tool.to_tool() for tool in self._tools.values()]
        self._session = session
        self._deadline = deadline

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def tools(self) -> list[types.Tool]:
        return list(self._listed)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self._tools.get(name)
        return tool.input_schema if tool else None

    async def call(self, name: str, arguments: Arguments | None) -> types.CallToolResult:
        tool = self._tools[name]
        # Many clients send null for an optional argument they do not use: that is "not given".
        args = {key: value for key, value in (arguments or {}).items() if value is not None}
        errors = sorted(self._validators[name].iter_errors(args), key=lambda e: e.validator != "required")
        if errors:
            return text_result(describe_invalid_arguments(errors[0]), is_error=True)
        try:
            async with asyncio.timeout(self._deadline):
                return await tool.handler(self._session, args)
        except (ToolError, BrowserUnavailable) as exc:
            return text_result(str(exc), is_error=True)
        except PlaywrightError as exc:
            if not self._session.connected:
                return text_result(f"browser unavailable: {first_line(exc)}", is_error=True)
            return text_result(f"{name} failed: {first_line(exc)}", is_error=True)
        except TimeoutError:
            return text_result(f"{name} did not finish within {self._deadline:g} s", is_error=True)
        except Exception as exc:  # a failing tool never takes the server down
            logger.exception("tool %s failed", name)
            return text_result(f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
