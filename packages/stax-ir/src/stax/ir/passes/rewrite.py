"""Small graph edits the passes share."""

from __future__ import annotations

from typing import Any

from ..graph import Graph, Node, Opcode, map_nodes, mark_events_only


def substitute(graph: Graph, node: Node, value: Any) -> None:
    """Make every user of ``node`` read ``value`` (a node or a constant) instead; erase ``node``.
    An effectful node (``Node.effectful``) is never substituted: its effect would be lost. A node
    kept for its floating-point events (``Node.events_only``) passes the mark to ``value``."""
    if node.effectful:
        raise ValueError(f"cannot substitute %{node.name}: it has a side effect (a random draw)")
    if node.events_only:
        mark_events_only(value)
    for user in list(node.users):
        user.set_args(*map_nodes((user.args, user.kwargs), lambda n: value if n is node else n))
    graph.erase_node(node)


def is_output_value(node: Node) -> bool:
    return any(u.op is Opcode.OUTPUT for u in node.users)
