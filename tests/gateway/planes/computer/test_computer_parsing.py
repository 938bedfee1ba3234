"""The computer plane's checks before anything reaches the display: actions and batches, the tree
query's fields, and the action schema the REST door publishes agreeing with the parser."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agentbox_gateway.planes.computer import InvalidComputerAction, computer_action_schema, tree_query
from agentbox_gateway.planes.computer.actions import DesktopAction, parse_batch, parse_computer_action
from agentbox_gateway.planes.computer.atspi import parse_node_id

NODE = ":1.5/org/a11y/atspi/accessible/168"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"action_type": "NOPE"}, "action_type"),
        ({"action_type": "NODE_FOCUS"}, "node_id"),
        ({"action_type": "NODE_SET_VALUE", "node_id": NODE}, "value"),
        ({"action_type": "NODE_SET_VALUE", "node_id": NODE, "value": True}, "value"),
        ({"action_type": "WINDOW_ACTIVATE", "window_id": 0}, "window_id"),
        ({"action_type": "WINDOW_MINIMIZE", "window_id": "12"}, "window_id"),
        ({"action_type": "SET_CLIPBOARD", "text": "é" * (600 * 1024)}, "text"),
        ({"action_type": "CLICK", "x": 5}, "y"),
        ({"action_type": "WAIT", "duration": 11}, "duration"),
    ],
)
def test_bad_actions_are_refused_naming_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidComputerAction) as refused:
        parse_computer_action(raw)
    assert refused.value.field == field
    assert refused.value.kind.value == "invalid"


def test_desktop_actions_parse() -> None:
    assert parse_computer_action({"action_type": "NODE_SET_VALUE", "node_id": NODE, "value": 10**400}) == (
        DesktopAction("NODE_SET_VALUE", node_id=NODE, value=str(10**400))
    )
    assert parse_computer_action({"action_type": "NODE_INVOKE", "node_id": NODE, "action": "press"}).action == "press"  # type: ignore[union-attr]


def test_a_batch_is_checked_whole_before_it_runs() -> None:
    move = {"action_type": "MOVE_TO", "x": 1, "y": 1}
    assert len(parse_batch([move] * 50)) == 50
    for raw, detail in (
        ([move] * 51, "at most 50"),
        ([], "non-empty"),
        ([move] + [{"action_type": "WAIT", "duration": 7}] * 3, "20 seconds"),
        ([move, {"action_type": "KEY_DOWN"}], "actions[1]"),
    ):
        with pytest.raises(InvalidComputerAction, match=detail.replace("[", r"\[").replace("]", r"\]")):
            parse_batch(raw)


def test_the_published_schema_agrees_with_the_parser() -> None:
    schema = computer_action_schema()
    valid = [
        {"action_type": "NODE_INVOKE", "node_id": NODE},
        {"action_type": "SET_CLIPBOARD", "text": "x"},
        {"action_type": "WINDOW_ACTIVATE", "window_id": 3},
        {"action_type": "CLICK", "x": 1, "y": 2},
    ]
    for raw in valid:
        jsonschema.validate(raw, schema)
        parse_computer_action(raw)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"action_type": "WINDOW_ACTIVATE", "window_id": 0}, schema)


def test_tree_query_clamps_numbers_and_refuses_words() -> None:
    query = tree_query(max_depth=1000, max_nodes=0, timeout_ms=5, limit=10**6, states="Focusable, showing")
    assert (query.max_depth, query.max_nodes, query.timeout_ms, query.limit) == (64, 1, 100, 1000)
    assert query.states == frozenset({"focusable", "showing"})
    for fields, name in (({"scope": "world"}, "scope"), ({"match": "fuzzy"}, "match"), ({"states": "shiny"}, "states")):
        with pytest.raises(InvalidComputerAction) as refused:
            tree_query(**fields)
        assert refused.value.field == name
    with pytest.raises(InvalidComputerAction):
        tree_query(match="regex", name="(")


def test_node_ids_are_bus_name_and_path() -> None:
    assert parse_node_id(NODE) == (":1.5", "/org/a11y/atspi/accessible/168")
    for bad in ("", "1.5/org", ":1.5", ":1.5/org/../x", "org.a11y.atspi.Registry/org/a11y/atspi/accessible/root"):
        with pytest.raises(InvalidComputerAction):
            parse_node_id(bad)
