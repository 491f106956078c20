"""Backward program slicing (spec definition 3.3, algorithm 3.1)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .graph import Graph, Node, Opcode, map_nodes


def ancestors(nodes: Iterable[Node], through: Callable[[Node], bool] | None = None) -> set[Node]:
    """``nodes`` and every node they are computed from (through nested arguments too), each
    visited once; with ``through``, the inputs only of the nodes it holds for."""
    seen: set[Node] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            if through is None or through(node):
                pending.extend(node.inputs)
    return seen


def backward_slice(graph: Graph, targets: Sequence[Node]) -> Graph:
    """A new graph of ``targets`` and all their ancestors, in ``graph``'s order, returning ``targets``.

    One traversal: every node enters the needed set at most once and every edge is looked at once,
    so this is O(|V| + |E|). Placeholders the slice needs are kept (with their metadata), so the
    slice runs on the same inputs as ``graph``.
    """
    needed = ancestors(targets)
    sliced = Graph(graph.dialect)
    copies: dict[Node, Node] = {}
    for node in graph.nodes:
        if node not in needed:
            continue
        args = map_nodes(node.args, copies.__getitem__)
        kwargs = map_nodes(node.kwargs, copies.__getitem__)
        copies[node] = sliced.create_node(node.op, node.target, args, kwargs, name=node.name,
                                          meta=dict(node.meta))
    sliced.output(tuple(copies[t] for t in targets))
    assert all(n.op is not Opcode.OUTPUT for n in needed)
    return sliced
