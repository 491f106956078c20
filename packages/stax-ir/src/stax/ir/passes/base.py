"""Passes over the capture graph (spec §4.1): small named rewrites, run in rounds to a fixed point.

A pass is a frozen dataclass with a ``name`` whose ``run(graph)`` rewrites the graph in place and
returns whether it changed anything. ``PassManager`` runs its passes in order, round after round,
until a round changes nothing (at most 16 rounds, the guard of spec §4.1), logging each change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..graph import Graph, Node, Opcode
from ..meta import TensorMeta, contiguous_strides
from ..ops import OPS, capture_targets_of, commutative_ops
from ..size_rules import broadcast_shapes
from ..sizes import is_symbolic

MAX_ROUNDS = 16


class Pass(Protocol):
    name: str

    def run(self, graph: Graph) -> bool: ...


#: Capture targets that combine their operands element by element (for metadata inference,
#: CSE keys, and the pointwise regions of §4.7).
ELEMENTWISE_FUNCTIONS = frozenset({
    "operator.add", "operator.sub", "operator.mul", "operator.truediv", "operator.floordiv",
    "operator.mod", "operator.pow", "operator.neg", "operator.pos", "operator.abs",
    "operator.lt", "operator.le", "operator.gt", "operator.ge", "operator.eq", "operator.ne",
    "operator.and_", "operator.or_", "operator.xor", "operator.invert", "numpy.where",
    "stax.nn.relu", "stax.nn.selu",
} | {f"numpy.{n}" for n, v in vars(np).items() if isinstance(v, np.ufunc) and  # not dir(np):
     v.nout == 1 and n not in ("matmul", "matvec", "vecmat", "vecdot")})  # it imports 168 modules
ELEMENTWISE_METHODS = frozenset({"exp", "log", "clip", "astype", "conj", "round"})


#: op-graph targets written as the capture targets the rules know (the passes run on both
#: graphs): an op's first declared capture target (``add`` -> ``operator.add``)
OP_AS_CAPTURE = {name: op.captures[0] for name, op in OPS.items() if op.captures}


def canonical_target(node: Node) -> str | None:
    """The capture-level name of what a call node computes, in either dialect, or None."""
    if node.op is not Opcode.CALL_FUNCTION:
        return None
    if node.graph.dialect != "op":
        return node.target
    if node.target == "extern":
        return None if node.kwargs.get("method") or node.kwargs.get("call_kwargs") \
            else node.kwargs.get("fn")
    return OP_AS_CAPTURE.get(node.target, f"op.{node.target}")


def call_kwargs(node: Node) -> dict[str, Any]:
    """The keyword arguments of the call itself (an extern op node keeps them in an attribute)."""
    if node.graph.dialect == "op":
        return node.kwargs.get("call_kwargs", {}) if node.target == "extern" else node.kwargs
    return node.kwargs


def is_elementwise(node: Node) -> bool:
    target = canonical_target(node)
    if target is not None:
        return target in ELEMENTWISE_FUNCTIONS and not call_kwargs(node)
    return node.op is Opcode.CALL_METHOD and node.target in ("exp", "log") and not node.kwargs


def constant_value(value: Any) -> bool:
    """A Python or NumPy scalar constant (not a node)."""
    return isinstance(value, (bool, int, float, np.generic))


def infer_meta(fn: Callable[..., Any], args: Sequence[Any]) -> TensorMeta | None:
    """Metadata of an element-wise call from its operands' metadata, without the data: the dtype
    from running ``fn`` on one-element stand-ins (NumPy decides it), the shape by broadcasting."""
    dummies, shapes = [], []
    for a in args:
        if isinstance(a, Node):
            if a.tensor is None:
                return None
            dummies.append(np.zeros((1,) * max(a.tensor.ndim, 1), a.tensor.dtype))
            shapes.append(a.tensor.shape)
        else:
            dummies.append(a)
    with np.errstate(all="ignore"):
        result = np.asarray(fn(*dummies))
    if any(is_symbolic(n) for s in shapes for n in s):
        shape = broadcast_shapes(shapes)  # in sizes (a size-generic graph), guards kept
        if shape is None:
            return None
    else:
        shape = tuple(np.broadcast_shapes(*shapes)) if shapes else ()
    return TensorMeta(shape, result.dtype.name, contiguous_strides(shape))


@dataclass
class PassLog:
    """One line per change, in the form of spec example 4.2."""

    lines: list[str] = field(default_factory=list)
    measures: list[tuple[str, int, tuple[int, int, int], tuple[int, int, int], bool]] = \
        field(default_factory=list)
    rounds: int = 0

    def __str__(self) -> str:
        return "\n".join(self.lines)


COMPOSITE = frozenset({"stax.nn.selu", "numpy.square", "numpy.clip", "numpy.deg2rad",
                       "numpy.rad2deg", "numpy.radians", "numpy.degrees", "numpy.exp2"})


def measure(graph: Graph) -> tuple[int, int, int]:
    """The termination measure of proposition 4.1: (composite nodes, nodes, binary operations
    with a constant on the left of a commutative operator)."""
    composite = sum(1 for n in graph.nodes if canonical_target(n) in COMPOSITE)
    left = sum(1 for n in graph.nodes if canonical_target(n) in COMMUTATIVE and len(n.args) == 2
               and constant_value(n.args[0]) and isinstance(n.args[1], Node) and
               not (n.tensor is not None and n.tensor.dtype in ("complex64", "complex128")))
    return composite, len(graph.nodes), left


#: capture targets of the commutative ops (table 4.1: their constants go to the right)
COMMUTATIVE = capture_targets_of(commutative_ops())


class PassManager:
    """Runs passes in rounds until a round changes nothing (spec §4.1)."""

    def __init__(self, passes: Sequence[Pass], verify: bool = False) -> None:
        self.passes = list(passes)
        self.verify = verify

    def run(self, graph: Graph) -> PassLog:
        from ..verify import verify_graph

        log = PassLog()
        for round_number in range(1, MAX_ROUNDS + 1):
            log.rounds = round_number
            changed_any = False
            for p in self.passes:
                before = measure(graph)
                changed = p.run(graph)
                after = measure(graph)
                log.measures.append((p.name, round_number, before, after, changed))
                if changed:
                    changed_any = True
                    log.lines.append(f"[round {round_number}] {p.name}: "
                                     f"{getattr(p, 'last_summary', 'changed the graph')}")
                if self.verify:
                    verify_graph(graph)
            if not changed_any:
                log.lines.append(f"[round {round_number}] no change: fixed point")
                return log
        log.lines.append(f"stopped after {MAX_ROUNDS} rounds without reaching a fixed point")
        return log
