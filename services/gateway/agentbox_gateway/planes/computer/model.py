"""What the computer plane answers with, and the accessibility query, kept apart from the modules that
speak X and D-Bus so the doors (and start-up) import neither."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidComputerAction

#: AT-SPI's state names, by bit (``AtspiStateType``).
STATE_NAMES = (
    "invalid active armed busy checked collapsed defunct editable enabled expandable expanded focusable "
    "focused has_tooltip horizontal iconified modal multi_line multiselectable opaque pressed resizable "
    "selectable selected sensitive showing single_line stale transient vertical visible "
    "manages_descendants indeterminate required truncated animated invalid_entry supports_autocompletion "
    "selectable_text is_default visited checkable has_popup read_only"
).split()


@dataclass(frozen=True)
class TreeQuery:
    """What a tree read keeps and how far it walks (AIO's fields; out-of-range values clamped)."""

    scope: str = "foreground"
    role: str | None = None
    name: str | None = None
    match: str = "substring"
    states: frozenset[str] = frozenset()
    include_offscreen: bool = False
    max_depth: int = 32
    max_nodes: int = 5000
    timeout_ms: int = 5000
    limit: int = 50

    def matcher(self) -> Callable[[Node], bool]:
        """Whether a node passes the role, name and states filters (case-insensitive)."""

        def compare(wanted: str | None) -> Callable[[str], bool]:
            if wanted is None:
                return lambda _: True
            if self.match == "exact":
                return lambda value: value.casefold() == wanted.casefold()
            if self.match == "regex":
                pattern = re.compile(wanted, re.IGNORECASE)
                return lambda value: pattern.search(value) is not None
            return lambda value: wanted.casefold() in value.casefold()

        role, name = compare(self.role), compare(self.name)
        return lambda node: role(node.role) and name(node.name) and self.states <= set(node.states)


def tree_query(
    *,
    scope: str | None = None,
    role: str | None = None,
    name: str | None = None,
    match: str | None = None,
    states: str | None = None,
    include_offscreen: bool | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    timeout_ms: int | None = None,
    limit: int | None = None,
) -> TreeQuery:
    """A :class:`TreeQuery` from a caller's fields: unknown words refused, numbers clamped."""
    if scope not in (None, "foreground", "desktop"):
        raise InvalidComputerAction("scope must be foreground or desktop", "scope")
    if match not in (None, "substring", "exact", "regex"):
        raise InvalidComputerAction("match must be substring, exact or regex", "match")
    wanted = frozenset(s.strip().lower() for s in (states or "").split(",") if s.strip())
    unknown = sorted(wanted - set(STATE_NAMES))
    if unknown:
        raise InvalidComputerAction(f"unknown states {', '.join(unknown)} (AT-SPI's state names)", "states")
    if match == "regex":
        for value, label in ((role, "role"), (name, "name")):
            try:
                re.compile(value or "")
            except re.error as exc:
                raise InvalidComputerAction(f"{label} is not a regular expression: {exc}", label) from exc

    def clamp(value: int | None, low: int, high: int, default: int) -> int:
        return default if value is None else max(low, min(high, value))

    return TreeQuery(
        scope=scope or "foreground",
        role=role or None,
        name=name or None,
        match=match or "substring",
        states=wanted,
        include_offscreen=bool(include_offscreen),
        max_depth=clamp(max_depth, 1, 64, 32),
        max_nodes=clamp(max_nodes, 1, 20_000, 5000),
        timeout_ms=clamp(timeout_ms, 100, 60_000, 5000),
        limit=clamp(limit, 1, 1000, 50),
    )


@dataclass
class Node:
    """One element: ``bounds`` in screen pixels (None: the element has no geometry)."""

    node_id: str
    role: str
    name: str
    states: list[str]
    bounds: dict[str, int] | None
    depth: int
    children: list[Node] = field(default_factory=list)

    def as_dict(self, with_children: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "node_id": self.node_id,
            "role": self.role,
            "name": self.name,
            "states": self.states,
            "bounds": self.bounds,
        }
        if with_children:
            data["children"] = [child.as_dict(True) for child in self.children]
        return data


@dataclass(frozen=True)
class Tree:
    """What a walk found: the roots it kept, every node it kept (tree order), and whether it stopped
    on a budget (then a missing node is no evidence the node is absent)."""

    roots: list[Node]
    nodes: list[Node]
    truncated: bool
    elapsed_ms: float


@dataclass(frozen=True)
class Window:
    """A top-level window; ``window_id`` is its X id, valid while the window exists."""

    window_id: int
    title: str
    process_id: int | None
    bounds: dict[str, int]
    minimized: bool


@dataclass(frozen=True)
class WindowList:
    snapshot_id: int
    windows: list[Window]
