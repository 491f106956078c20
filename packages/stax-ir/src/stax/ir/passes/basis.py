"""Op-level decomposition against a backend's basis (spec §4.8, definition 4.2, proposition 4.3).

An op is expanded by its rule only when the backend has no implementation of its own for it (it
is not in the basis) and it draws no random numbers. Ops in the basis stay whole — a backend that
computes layer_norm with one Welford pass would lose that by decomposing it — and an op with
neither a rule nor an implementation stays too, as a fallback kernel. Rules only produce ops of
smaller depth, so the expansion terminates (proposition 4.3).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..graph import Graph, Node, Opcode
from ..meta import TensorMeta
from ..ops import OPS
from .rewrite import substitute


def decompose_to_basis(graph: Graph, basis: Collection[str]) -> list[str]:
    """Expand every op outside ``basis`` that has a rule, until none is left; what was expanded."""
    expanded: list[str] = []
    changed = True
    while changed:
        changed = False
        for node in list(graph.nodes):
            op = OPS.get(node.target) if node.op is Opcode.CALL_FUNCTION else None
            if op is None or op.decompose is None or node.effectful or node.target in basis:
                continue

            def emit(target: str, operands: tuple[Any, ...], attrs: dict[str, Any],
                     meta: TensorMeta, anchor: Node = node) -> Node:
                info: dict[str, Any] = {"tensor": meta}
                if anchor.source:
                    info["source"] = anchor.source
                with graph.inserting_before(anchor):
                    return graph.call_function(target, operands, attrs, name=target, meta=info)

            substitute(graph, node, op.decompose(emit, node))
            expanded.append(node.target)
            changed = True
    return expanded
