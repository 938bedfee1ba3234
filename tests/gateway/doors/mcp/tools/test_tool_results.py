"""How tool outcomes are written for MCP: ``compact_json`` (the text of every JSON result) keeps
aiod's spelling, sorted keys and no spaces, byte for byte what ``json.dumps`` wrote before it was
made faster, for every string, number and nesting a tool returns."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentbox_gateway.doors.mcp.tools.results import compact_json


def aiod_spelling(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


EVERY_CONTROL = "".join(chr(code) for code in range(0x20)) + "\x7f"
VALUES = {
    "a file read": {"success": True, "path": "/tmp/x", "content": "line\n" * 1000, "action": "read"},
    "escapes": {"text": 'quote " backslash \\ slash / tab \t' + EVERY_CONTROL},
    "non-ASCII": {"text": "héllo ✓ 😀 \u2028\u2029 \ufeff"},
    "nested, unsorted": {"b": {"z": [{"y": 1, "x": None}], "a": []}, "a": {}},
    "numbers": {"int": -5, "big": 10**30, "float": 1.5, "tenth": 0.1, "bools": [True, False]},
    "tuples": {"pair": (1, "two")},
    "a lone surrogate": {"text": "\ud800"},
    "not an object": ["x", 1, None],
}


@pytest.mark.parametrize("case", VALUES)
def test_compact_json_is_aiods_spelling(case: str) -> None:
    assert compact_json(VALUES[case]) == aiod_spelling(VALUES[case])


def test_a_float_keeps_its_value_when_spelt_otherwise() -> None:
    for value in (1e-05, 1e16, 2.0**60, 123456789.123):
        assert json.loads(compact_json({"n": value})) == {"n": value}
