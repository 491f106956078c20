"""Steps that read no element of an operand (part of NormalizeOperators, spec §4.2).

NumPy computes every step in full and reports its floating-point events, whatever reads the
result. A fused kernel computes a value only at the elements its readers read: an item
assignment to an empty region (``y[1:] = np.sqrt(x)`` with one row in ``y``) or a step with an
empty result (``np.sqrt(x) * np.ones((0, 1))``) reads none, so the value's kernel never ran and
its warning was lost (found by the stress suite). Likewise a predicate whose answer does not
depend on its integer operand (``np.isfinite(i % j)`` is true wherever NumPy computed ``i % j``,
dividing by zero on the way; found by the stress suite). These are rewritten so that the value is
no longer read at all; DCE then keeps it as an unused step computed for its events
(``Node.events_only``), as it keeps ``_ = np.sqrt(x)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Node, Opcode
from ..meta import TensorMeta, dense_strides
from ..sizes import concrete, holds_size, specialize
from .dce import may_raise_events, may_raise_on_data

SETITEM = "stax.functional.setitem"


def _numel(node: Node) -> Any:
    meta = node.tensor
    return None if meta is None else meta.numel  # a size expression in dynamic mode


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def empty_region_value(node: Node) -> Node | None:
    """The value operand of an item assignment whose key selects no element, or None. Its
    region is measured on a zero-stride view of the target's shape (no memory)."""
    if node.op is not Opcode.CALL_FUNCTION or node.target != SETITEM or len(node.args) != 3:
        return None
    target, key, value = node.args
    if not isinstance(value, Node) or not isinstance(target, Node) or target.tensor is None or \
            any(isinstance(leaf, Node) for leaf in _leaves(key)):
        return None
    shape = target.tensor.shape
    symbolic = holds_size((shape, key))
    if symbolic:  # measured at the traced sizes; empty there, it is made exact in them (int)
        shape, key = concrete(shape), concrete(key)
    try:
        region = np.broadcast_to(np.empty((), dtype=bool), shape)[key]
    except (IndexError, TypeError, ValueError):
        return None
    if region.size:
        return None  # a region of no element at other sizes is the update's own to skip
    if symbolic:
        specialize(target.tensor.shape)
        specialize(node.args[1])
    return value


def reads_nothing(node: Node) -> bool:
    """Whether ``node`` has an empty result computed from a non-empty operand that may report
    events: NumPy computed that operand in full, a kernel of ``node`` would read none of it."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or node.effectful or \
            node.graph.dialect == "op" or "sequence" in node.meta or _numel(node) != 0 or \
            may_raise_on_data(node):
        return False
    return any((_numel(a) or 0) > 0 and may_raise_events(a) for a in node.inputs)


def empty_array(graph: Graph, node: Node, creation: str = "numpy.zeros") -> Node:
    """A new ``np.zeros`` (or ``creation``) node of ``node``'s shape, dtype and memory order
    (``np.isnan`` of an F-ordered integer array is F-ordered), placed before it."""
    meta = node.tensor
    assert meta is not None
    with graph.inserting_before(node):
        zeros = graph.call_function(creation, (tuple(meta.shape),), {"dtype": meta.dtype})
    zeros.meta["tensor"] = TensorMeta(tuple(meta.shape), meta.dtype,
                                      dense_strides(tuple(meta.shape), tuple(meta.strides)),
                                      meta.device,
                                      meta.scalar)  # a NumPy scalar stands for a NumPy scalar
    if node.source is not None:
        zeros.meta["source"] = node.meta["source"]
    return zeros


#: predicates answered by an integer or bool operand's dtype alone: the answer on such an operand
INTEGER_ANSWERS = {"numpy.isfinite": True, "numpy.isnan": False, "numpy.isinf": False}


def answered_by_dtype(node: Node) -> bool | None:
    """The answer of a predicate whose integer operand is not read (``INTEGER_ANSWERS``), else
    None. The operand is then unused: DCE keeps what in it may report an event (``x % x`` under
    ``np.abs``) and drops the rest."""
    answer = INTEGER_ANSWERS.get(node.target) if node.op is Opcode.CALL_FUNCTION else None
    if answer is None or len(node.args) != 1 or node.kwargs or node.tensor is None:
        return None
    operand = node.args[0]
    if not isinstance(operand, Node) or operand.tensor is None or \
            np.dtype(operand.tensor.dtype).kind not in "iub":
        return None
    return answer


def constant_array(graph: Graph, node: Node, answer: bool) -> Node:
    """A new ``np.ones``/``np.zeros`` node of ``node``'s shape and dtype, placed before it."""
    return empty_array(graph, node, "numpy.ones" if answer else "numpy.zeros")
