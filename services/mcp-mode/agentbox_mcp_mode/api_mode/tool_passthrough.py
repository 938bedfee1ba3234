"""Tool-calling passthrough for the OpenAI-compatible endpoint: the caller's ``tools`` become
functions the agent may ask the *caller* to run.

With ``tools`` (and ``tool_choice`` other than ``none``) the agent is told about the functions and
how to call them: by answering with only ``{"tool_calls": [{"name": …, "arguments": {…}}]}``. That
answer is checked with the same parse/validate/retry loop as ``response_format`` — each call's
``arguments`` against its function's ``parameters`` — and handed back as ``message.tool_calls``
(``arguments`` as a JSON string) with ``finish_reason: "tool_calls"``. The caller runs the
functions and sends the results as ``tool`` messages in the next request, which the transcript
carries to the agent.

* ``auto`` (default): a tool call or a final answer; with a ``response_format`` schema the final
  answer must match it (the run validates against "tool call *or* that schema").
* ``required`` / a named function: the answer must be a call (to that function), retried if not.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from ..schemas import MatchAborted, match_answer
from .openai_format import RequestProblem

INSTRUCTIONS = """You can ask the caller to run these functions for you (they run on the caller's side; \
they are not your own tools):
{functions}

To call one or more of them, reply with ONLY a JSON object of this form and nothing else:
{{"tool_calls": [{{"name": "<function name>", "arguments": {{<arguments matching its parameters>}}}}]}}
The results will come back in the next message of the conversation. {choice}"""

CHOICE_AUTO = "If you need none of them, answer normally."
CHOICE_REQUIRED = "You must call at least one of them now."
CHOICE_NAMED = "You must call the function {name} now."


@dataclass(frozen=True)
class ToolMode:
    #: Appended to the system prompt.
    instructions: str
    #: What a tool-call answer must look like.
    schema: dict[str, Any]
    #: True: the answer must be a tool call (``required`` or a named function).
    required: bool
    #: Each function's ``parameters`` schema, named as the request names it (checked by the caller).
    parameters: tuple[tuple[str, dict[str, Any]], ...] = ()

    def run_schema(self, answer_schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """The schema the run validates against, given the caller's ``response_format`` schema."""
        if self.required:
            return self.schema
        if answer_schema is None:
            return None  # free text or a call: told apart after the run
        return {"anyOf": [self.schema, answer_schema]}

    async def calls(self, text: str, parsed: Any, time_limit: float) -> list[dict[str, Any]] | None:
        """The OpenAI ``tool_calls`` of an answer, or None when it is not a tool call (matched in
        a worker process, like every answer; a match stopped by ``time_limit`` is no call)."""
        candidate = text if parsed is None else json.dumps(parsed)  # parsed: validated by the run
        try:
            value, error = await match_answer(candidate, self.schema, time_limit)
        except MatchAborted:
            return None
        if error is not None:
            return None
        return [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": json.dumps(call["arguments"], ensure_ascii=False),
                },
            }
            for call in value["tool_calls"]
        ]


def _functions(tools: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(tools, list):
        raise RequestProblem(400, "tools must be a list")
    functions: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise RequestProblem(400, f"tools[{index}] must be {{'type': 'function', 'function': {{'name': …}}}}")
        parameters = function.get("parameters") or {"type": "object"}
        if not isinstance(parameters, dict):
            raise RequestProblem(400, f"tools[{index}].function.parameters must be a JSON Schema object")
        functions[function["name"]] = {
            "name": function["name"],
            "description": function.get("description") or "",
            "parameters": parameters,
        }
    return functions


def tool_mode(tools: Any, tool_choice: Any) -> ToolMode | None:
    """The tool mode of a request, or None (no tools, or ``tool_choice: "none"``)."""
    if not tools:
        if tool_choice not in (None, "none", "auto"):
            raise RequestProblem(400, "tool_choice needs tools")
        return None
    functions = _functions(tools)
    if tool_choice in (None, "auto"):
        allowed, choice, required = list(functions), CHOICE_AUTO, False
    elif tool_choice == "none":
        return None
    elif tool_choice == "required":
        allowed, choice, required = list(functions), CHOICE_REQUIRED, True
    else:
        named = tool_choice.get("function") if isinstance(tool_choice, dict) else None
        name = named.get("name") if isinstance(named, dict) else None
        if name not in functions:
            raise RequestProblem(400, "tool_choice must be none, auto, required or a function named in tools")
        allowed, choice, required = [name], CHOICE_NAMED.format(name=name), True
    call_shapes = [
        {
            "type": "object",
            "properties": {"name": {"const": name}, "arguments": functions[name]["parameters"]},
            "required": ["name", "arguments"],
        }
        for name in allowed
    ]
    schema = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "minItems": 1, "items": {"anyOf": call_shapes}}},
        "required": ["tool_calls"],
        "additionalProperties": False,
    }
    listing = json.dumps([functions[name] for name in functions], indent=2, ensure_ascii=False)
    parameters = tuple(
        (f"tools[{index}].function.parameters", tool["function"]["parameters"] or {"type": "object"})
        for index, tool in enumerate(tools)
    )
    return ToolMode(INSTRUCTIONS.format(functions=listing, choice=choice), schema, required, parameters)
