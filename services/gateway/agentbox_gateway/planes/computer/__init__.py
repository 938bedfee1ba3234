"""The computer plane: the sandbox's X display as a desktop (``/v2/computer``, the computer MCP tools)."""

from .actions import (
    ACTION_TYPES,
    MAX_BATCH_ACTIONS,
    MAX_BATCH_WAIT_SECONDS,
    MAX_CLIPBOARD_BYTES,
    computer_action_schema,
)
from .errors import DisplayOff, InvalidComputerAction, NodeNotFound, WindowNotFound
from .model import Node, Tree, TreeQuery, Window, WindowList, tree_query
from .plane import ActionsResult, Capture, ComputerInfo, ComputerPlane

__all__ = [
    "ACTION_TYPES",
    "MAX_BATCH_ACTIONS",
    "MAX_BATCH_WAIT_SECONDS",
    "MAX_CLIPBOARD_BYTES",
    "ActionsResult",
    "Capture",
    "ComputerInfo",
    "ComputerPlane",
    "DisplayOff",
    "InvalidComputerAction",
    "Node",
    "NodeNotFound",
    "Tree",
    "TreeQuery",
    "Window",
    "WindowList",
    "WindowNotFound",
    "computer_action_schema",
    "tree_query",
]
