"""CSE by value numbering (spec §4.5, proposition 4.2): one pass in topological order.

Effectful nodes (``Node.effectful``: a second random draw is another value and advances the
generator again) and calls with several results are never merged; the operator must also be
written the same way (NormalizeOperators runs first so that ``2 * x`` and
``x * 2`` are)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Graph, Node, Opcode


def _key(value: Any) -> Any:
    if isinstance(value, Node):
        return ("node", value.name)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (float, np.floating)):  # the bits: -0.0 and 0.0, NaNs of either sign
        return (type(value).__name__, np.asarray(value).tobytes())
    return (type(value).__name__, repr(value))


@dataclass
class CSE:
    name: str = "CSEPass"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        seen: dict[Any, Node] = {}
        notes = []
        for node in list(graph.nodes):
            if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or \
                    node.effectful or node.meta.get("sequence"):
                continue
            key = (node.op.value, node.target, _key(node.args), _key(node.kwargs))
            first = seen.get(key)
            if first is None:
                seen[key] = node
                continue
            notes.append(f"%{node.name} merged into %{first.name}")
            if node.meta.get("numpy_call"):  # a data gate reads it: NumPy's bits for every use
                first.meta["numpy_call"] = True
            node.replace_all_uses_with(first)
            graph.erase_node(node)
        self.last_summary = "; ".join(notes)
        return bool(notes)
