"""PointwiseFusionHint (spec §4.7): the maximal element-wise regions, by union-find.

Writes ``meta["region"]`` on every element-wise node; ``regions(graph)`` lists them in the form
of the spec's example after §4.7. Only metadata changes, so from the second round on it reports
no change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..graph import Graph, Node, Opcode
from .base import is_elementwise


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}
        self.rank: dict[Node, int] = {}

    def add(self, x: Node) -> None:
        self.parent.setdefault(x, x)
        self.rank.setdefault(x, 0)

    def find(self, x: Node) -> Node:
        root = x
        while self.parent[root] is not root:
            root = self.parent[root]
        while self.parent[x] is not root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: Node, b: Node) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return
        if self.rank[ra] < self.rank[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.rank[ra] += self.rank[ra] == self.rank[rb]


@dataclass
class PointwiseFusionHint:
    name: str = "PointwiseFusionHint"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        sets = _UnionFind()
        members = [n for n in graph.nodes if is_elementwise(n)]
        for n in members:
            sets.add(n)
        for n in members:
            for inp in n.inputs:
                if inp in sets.parent:
                    sets.union(n, inp)
        ids: dict[Node, int] = {}
        changed = False
        for n in members:
            region = ids.setdefault(sets.find(n), len(ids))
            if n.meta.get("region") != region:
                n.meta["region"] = region
                changed = True
        for n in graph.nodes:
            if n not in sets.parent and "region" in n.meta:
                del n.meta["region"]
                changed = True
        self.last_summary = f"{len(ids)} element-wise region(s)"
        return changed


def regions(graph: Graph) -> list[tuple[str, Any, Any]]:
    """``[(node, 'pointwise', region) or (node, None, None)]`` for every call node."""
    return [(n.name, "pointwise", n.meta["region"]) if "region" in n.meta else (n.name, None, None)
            for n in graph.nodes if n.op in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD)]
