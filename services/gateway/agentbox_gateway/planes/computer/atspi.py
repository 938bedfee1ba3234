"""The display's accessibility tree through AT-SPI2, the protocol Linux toolkits (GTK, Qt, Chromium
with ``--force-renderer-accessibility``) expose their widgets on: a D-Bus of its own whose address the
session bus's ``org.a11y.Bus`` gives out. Spoken with ``dbus-fast`` (pure Python, asyncio).

A node's id is its application's bus name and object path (``:1.5/org/a11y/atspi/accessible/168``):
the application keeps that path for the element while the element exists, so an id read in one
snapshot still names the element in the next, and answers "not found" once the element is gone."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from .errors import AccessibilityUnavailable, ComputerError, InvalidComputerAction, NodeNotFound
from .model import STATE_NAMES, Node, Tree, TreeQuery

_ACCESSIBLE = "org.a11y.atspi.Accessible"
_COMPONENT = "org.a11y.atspi.Component"
_ACTION = "org.a11y.atspi.Action"
_EDITABLE = "org.a11y.atspi.EditableText"
_VALUE = "org.a11y.atspi.Value"
_TEXT = "org.a11y.atspi.Text"
_PROPERTIES = "org.freedesktop.DBus.Properties"
_REGISTRY = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
#: D-Bus errors meaning the element (or its application) is gone.
_GONE = (
    "org.freedesktop.DBus.Error.UnknownObject",
    "org.freedesktop.DBus.Error.ServiceUnknown",
)
_NODE_ID = re.compile(r"(:[0-9]+\.[0-9]+)(/[A-Za-z0-9_/]+)")
#: D-Bus calls awaiting their reply at once: a thousand sent at once fill the socket's buffer, and
#: dbus-fast then fails the write (EAGAIN) and drops the connection instead of waiting.
IN_FLIGHT = 64
#: Seconds a node that said it takes the focus gets to show it has.
FOCUS_TIMEOUT = 5.0
#: Seconds typed text gets to show in its field.
TEXT_TIMEOUT = 10.0
#: Seconds one D-Bus call may take before the application counts as hung.
CALL_TIMEOUT = 5.0


def _state_names(bits: list[int]) -> list[str]:
    value = bits[0] | (bits[1] << 32) if len(bits) > 1 else bits[0]
    return [name for index, name in enumerate(STATE_NAMES) if value >> index & 1]


def parse_node_id(node_id: str) -> tuple[str, str]:
    found = _NODE_ID.fullmatch(node_id)
    if found is None:
        raise InvalidComputerAction("node_id is not one the accessibility tree gave out", "node_id")
    return found[1], found[2]


class Accessibility:
    """A connection to the accessibility bus, opened on first use and again after it is lost."""

    def __init__(self, session_bus: str) -> None:
        self.session_bus = session_bus
        self._bus: MessageBus | None = None
        self._lock = asyncio.Lock()
        self._in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def aclose(self) -> None:
        if self._bus is not None:
            self._bus.disconnect()
            self._bus = None

    async def _connect(self) -> MessageBus:
        if self._bus is not None and self._bus.connected:
            return self._bus
        async with self._lock:
            if self._bus is not None and self._bus.connected:
                return self._bus
            if not self.session_bus:
                raise AccessibilityUnavailable("no session D-Bus is configured")
            try:
                session = await asyncio.wait_for(MessageBus(bus_address=self.session_bus).connect(), CALL_TIMEOUT)
                try:
                    reply = await asyncio.wait_for(
                        session.call(
                            Message(
                                destination="org.a11y.Bus",
                                path="/org/a11y/bus",
                                interface="org.a11y.Bus",
                                member="GetAddress",
                            )
                        ),
                        CALL_TIMEOUT,
                    )
                finally:
                    session.disconnect()
                if reply is None or reply.message_type == MessageType.ERROR:
                    detail = reply.body if reply is not None else "no reply"
                    raise AccessibilityUnavailable(f"the session bus has no accessibility bus ({detail})")
                self._bus = await asyncio.wait_for(MessageBus(bus_address=reply.body[0]).connect(), CALL_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:
                raise AccessibilityUnavailable(f"{type(exc).__name__}: {exc}") from exc
            return self._bus

    async def _call(
        self, node: tuple[str, str], interface: str, member: str, signature: str = "", body: list[Any] | None = None
    ) -> list[Any]:
        bus = await self._connect()
        message = Message(
            destination=node[0],
            path=node[1],
            interface=interface,
            member=member,
            signature=signature,
            body=body or [],
        )
        try:
            async with self._in_flight, asyncio.timeout(CALL_TIMEOUT):  # no task a call, as wait_for makes
                reply = await bus.call(message)
        except TimeoutError as exc:
            raise ComputerError(f"the application {node[0]} did not answer {member} in {CALL_TIMEOUT:g} s") from exc
        except (OSError, EOFError) as exc:
            self._bus = None
            raise AccessibilityUnavailable(f"the accessibility bus went away: {exc}") from exc
        if reply is None:
            raise ComputerError(f"{member} got no reply")
        if reply.message_type == MessageType.ERROR:
            if reply.error_name in _GONE:
                raise NodeNotFound(f"no accessibility node {node[0]}{node[1]} (its element is gone)")
            raise ComputerError(f"{member} failed: {reply.error_name}: {reply.body}")
        return list(reply.body)

    async def _extents(self, node: tuple[str, str]) -> dict[str, int] | None:
        """Screen bounds; None for an element without geometry (no Component interface)."""
        if node == _REGISTRY:
            return None
        try:
            x, y, width, height = (await self._call(node, _COMPONENT, "GetExtents", "u", [0]))[0]
        except NodeNotFound:
            raise
        except ComputerError:
            return None
        return {"x": x, "y": y, "width": width, "height": height}

    async def _read(self, node: tuple[str, str], depth: int) -> tuple[Node, list[tuple[str, str]]]:
        """One node's fields and its children's references, asked for at once."""
        name, role, states, children, bounds = await asyncio.gather(
            self._call(node, _PROPERTIES, "Get", "ss", [_ACCESSIBLE, "Name"]),
            self._call(node, _ACCESSIBLE, "GetRoleName"),
            self._call(node, _ACCESSIBLE, "GetState"),
            self._call(node, _ACCESSIBLE, "GetChildren"),
            self._extents(node),
        )
        value = name[0].value if isinstance(name[0], Variant) else name[0]
        found = Node(f"{node[0]}{node[1]}", role[0], str(value or ""), _state_names(states[0]), bounds, depth)
        return found, [(str(bus), str(path)) for bus, path in children[0]]

    async def tree(self, query: TreeQuery) -> Tree:
        """Walk the tree breadth first, a level's nodes at once, within the query's budgets."""
        started = time.monotonic()
        deadline = started + query.timeout_ms / 1000
        matches = query.matcher()
        truncated = False
        _, applications = await self._read(_REGISTRY, 0)
        level: list[tuple[tuple[str, str], int, str | None]] = [(app, 1, None) for app in applications]
        kept: list[Node] = []
        parents: dict[str, Node] = {}
        roots: list[Node] = []
        seen = 0
        while level:
            if time.monotonic() >= deadline:
                truncated = True
                break
            batch = level[: query.max_nodes - seen]
            if len(batch) < len(level):
                truncated = True
            remaining = max(0.001, deadline - time.monotonic())
            try:
                results = await asyncio.wait_for(
                    asyncio.gather(*(self._read(ref, depth) for ref, depth, _ in batch), return_exceptions=True),
                    remaining,
                )
            except TimeoutError:
                truncated = True
                break
            seen += len(batch)
            following: list[tuple[tuple[str, str], int, str | None]] = []
            for (_, depth, parent_id), result in zip(batch, results, strict=True):
                if isinstance(result, NodeNotFound):
                    continue  # gone while walked
                if isinstance(result, BaseException):
                    raise result
                node, children = result
                if not query.include_offscreen and "showing" not in node.states and depth > 1:
                    continue  # hidden, and so is everything under it
                parent = parents.get(parent_id) if parent_id else None
                (parent.children if parent is not None else roots).append(node)
                parents[node.node_id] = node
                kept.append(node)
                if depth < query.max_depth:
                    following.extend((child, depth + 1, node.node_id) for child in children)
                elif children:
                    truncated = True
            if seen >= query.max_nodes and following:
                truncated = True
                break
            level = following
        if query.scope == "foreground":
            roots = _foreground(roots)
        kept_ids = {n.node_id for root in roots for n in _walk(root)}
        nodes = [n for n in kept if n.node_id in kept_ids]
        if query.role or query.name or query.states:
            roots = [pruned for root in roots if (pruned := _prune(root, matches)) is not None]
            nodes = [n for n in nodes if matches(n)]
        return Tree(roots, nodes, truncated, (time.monotonic() - started) * 1000)

    async def node(self, node_id: str) -> Node:
        """One node, read now (NotFound once its element is gone)."""
        found, _ = await self._read(parse_node_id(node_id), 0)
        if "defunct" in found.states:
            raise NodeNotFound(f"no accessibility node {node_id} (its element is gone)")
        return found

    async def interfaces(self, node_id: str) -> list[str]:
        return [str(i) for i in (await self._call(parse_node_id(node_id), _ACCESSIBLE, "GetInterfaces"))[0]]

    async def focus(self, node_id: str) -> str:
        node = await self.node(node_id)
        taken = (await self._call(parse_node_id(node_id), _COMPONENT, "GrabFocus"))[0]
        # Chromium focuses the element in its renderer after answering: keys sent before would go to
        # the element focused before, so the focus is awaited (its ``focused`` state).
        deadline = time.monotonic() + FOCUS_TIMEOUT
        while taken and "focused" not in (await self.node(node_id)).states:
            if time.monotonic() > deadline:
                taken = False
                break
            await asyncio.sleep(0.02)
        if not taken:
            raise ComputerError(f"the {node.role} {node.name!r} did not take the focus")
        return f"Focused the {node.role} {node.name!r}"

    async def invoke(self, node_id: str, action: str | None) -> str:
        """Do one of the node's actions: ``action`` by name (case-insensitive), else its first."""
        node = await self.node(node_id)
        ref = parse_node_id(node_id)
        count = (await self._call(ref, _PROPERTIES, "Get", "ss", [_ACTION, "NActions"]))[0].value
        names = [str((await self._call(ref, _ACTION, "GetName", "i", [i]))[0]) for i in range(count)]
        if not names:
            raise ComputerError(f"the {node.role} {node.name!r} has no action to invoke")
        index = 0
        if action is not None:
            folded = [n.casefold() for n in names]
            if action.casefold() not in folded:
                raise InvalidComputerAction(
                    f"the {node.role} {node.name!r} has no action {action!r} (it has {', '.join(names)})", "action"
                )
            index = folded.index(action.casefold())
        done = (await self._call(ref, _ACTION, "DoAction", "i", [index]))[0]
        if not done:
            raise ComputerError(f"the {node.role} {node.name!r} refused its action {names[index]!r}")
        return f"Invoked {names[index]!r} on the {node.role} {node.name!r}"

    async def wait_for_text(self, node_id: str, value: str) -> None:
        """Until the node's text (its Text interface) is ``value``; :class:`ComputerError` when it is
        not within :data:`TEXT_TIMEOUT`. A node without text to read is not waited for."""
        ref = parse_node_id(node_id)
        if _TEXT not in await self.interfaces(node_id):
            return
        deadline = time.monotonic() + TEXT_TIMEOUT
        while (shown := str((await self._call(ref, _TEXT, "GetText", "ii", [0, -1]))[0])) != value:
            if time.monotonic() > deadline:
                raise ComputerError(f"the field holds {len(shown)} characters, not the {len(value)} typed into it")
            await asyncio.sleep(0.02)

    async def set_text(self, node_id: str, value: str) -> bool:
        """Set the node's text where it has the EditableText interface; False: it has not."""
        ref = parse_node_id(node_id)
        interfaces = await self.interfaces(node_id)
        if _EDITABLE in interfaces:
            return bool((await self._call(ref, _EDITABLE, "SetTextContents", "s", [value]))[0])
        if _VALUE in interfaces:
            try:
                number = float(value)
            except ValueError:
                return False
            await self._call(ref, _PROPERTIES, "Set", "ssv", [_VALUE, "CurrentValue", Variant("d", number)])
            return True
        return False


def _walk(node: Node) -> list[Node]:
    found = [node]
    for child in node.children:
        found.extend(_walk(child))
    return found


def _foreground(applications: list[Node]) -> list[Node]:
    """The active window's frames (with their application); every frame when none is active, as on a
    display without a window manager, where no window is told it is active."""
    active = [
        Node(
            app.node_id,
            app.role,
            app.name,
            app.states,
            app.bounds,
            app.depth,
            [f for f in app.children if "active" in f.states],
        )
        for app in applications
    ]
    active = [app for app in active if app.children]
    return active or applications


def _prune(node: Node, matches: Callable[[Node], bool]) -> Node | None:
    """``node`` with only the branches that lead to a match (None: none does)."""
    children = [pruned for child in node.children if (pruned := _prune(child, matches)) is not None]
    if not children and not matches(node):
        return None
    return Node(node.node_id, node.role, node.name, node.states, node.bounds, node.depth, children)
