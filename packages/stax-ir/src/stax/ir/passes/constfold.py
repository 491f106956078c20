"""ConstFold (spec §4.3): Python-scalar arithmetic, comparisons and indexing whose operands are all
constants. Array operations are never folded (their results would bloat the artifact)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from ..graph import Graph, Opcode
from .base import constant_value
from .rewrite import substitute

_FOLDABLE = {f"operator.{n}": getattr(operator, n) for n in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "lt", "le",
    "gt", "ge", "eq", "ne", "getitem")}


@dataclass
class ConstFold:
    name: str = "ConstFold"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        notes = []
        for node in list(graph.nodes):
            fn = _FOLDABLE.get(node.target) if graph.dialect == "capture" else None
            if fn is None or node.op is not Opcode.CALL_FUNCTION or node.kwargs or node.effectful:
                continue
            if not all(constant_value(a) or isinstance(a, (tuple, str)) for a in node.args):
                continue
            if not all(type(a) in (bool, int, float, tuple, str) for a in node.args):
                continue  # Python scalars only
            try:
                value = fn(*node.args)
            except Exception:
                continue
            if type(value) not in (bool, int, float):
                continue
            notes.append(f"%{node.name} = {value!r}")
            substitute(graph, node, value)
        self.last_summary = "; ".join(notes)
        return bool(notes)
