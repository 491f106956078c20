"""DCE (spec §4.6): delete nodes no output depends on, keeping inputs and side effects (an
effectful node — a random draw — runs whether or not its value is used: ``Node.effectful``).

Data gates are dead by this definition (corollary 3.1): capture extracts their replay subgraph
before any pass runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Graph, Opcode


@dataclass
class DCE:
    name: str = "DCE"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        removed = []
        for node in reversed(list(graph.nodes)):
            if node.users or node.op in (Opcode.PLACEHOLDER, Opcode.OUTPUT):
                continue
            if node.effectful:  # a draw advances its generator: a side effect
                continue
            removed.append(node.name)
            graph.erase_node(node)
        self.last_summary = "removed " + ", ".join(f"%{n}" for n in reversed(removed))
        return bool(removed)
