"""DCE (spec §4.6): delete nodes no output depends on, keeping inputs and side effects (an
effectful node — a random draw — runs whether or not its value is used: ``Node.effectful``).

NumPy computes every step a program writes, and reports the floating-point events of each
(``np.errstate``: ``_ = np.log(x)`` warns "divide by zero encountered in log" for a zero, or
raises, or calls the error callback) whether or not its value is read. So an unused node that may
raise such an event is not deleted but marked ``events_only`` (``Node.events_only``): the later
layers compute it for its events and never return its value. Steps that cannot raise one —
integer arithmetic other than division, views, copies and other data movement, array creation —
are deleted. Which operations report is settled per operation in the loop layer
(``stax.loop.unused``); the test here only spares the cheap cases their lowering.

Data gates are dead by this definition (corollary 3.1): capture extracts their replay subgraph
before any pass runs. Their computations are kept like any other unused step that may raise an
event: the program computed them, so eager NumPy reported their events."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..graph import EVENTS_ONLY, Graph, Node, Opcode
from ..meta import TensorMeta
from ..ops import SCALAR_OPERATORS

#: capture targets (``method:`` for methods) and op-graph targets (``op:``) that never raise a
#: floating-point event NumPy reports: they move, copy, select, compare or create elements, or
#: compute exactly
NO_EVENTS = frozenset({
    "operator.getitem", "numpy.copy", "numpy.asarray", "numpy.ascontiguousarray",
    "numpy.asfortranarray", "numpy.reshape", "numpy.ravel", "numpy.transpose", "numpy.swapaxes",
    "numpy.moveaxis", "numpy.squeeze", "numpy.expand_dims", "numpy.broadcast_to",
    "numpy.atleast_1d", "numpy.atleast_2d", "numpy.atleast_3d", "numpy.concatenate",
    "numpy.stack", "numpy.hstack", "numpy.vstack", "numpy.dstack", "numpy.column_stack",
    "numpy.flip", "numpy.fliplr", "numpy.flipud", "numpy.roll", "numpy.rot90", "numpy.tile",
    "numpy.repeat", "numpy.take", "numpy.tril", "numpy.triu", "numpy.diagonal", "numpy.sort",
    "numpy.argsort", "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full",
    "numpy.zeros_like", "numpy.ones_like", "numpy.empty_like", "numpy.full_like", "numpy.arange",
    "numpy.linspace", "numpy.eye", "numpy.identity", "stax.functional.setitem",
    "method:reshape", "method:ravel", "method:flatten", "method:transpose", "method:swapaxes",
    "method:squeeze", "method:copy", "method:view", "method:take", "method:repeat",
    "method:diagonal", "method:sort", "method:argsort",
    "op:view", "op:reshape", "op:take", "op:take_const", "op:concatenate", "op:stack",
    "op:pad", "op:roll", "op:tril", "op:triu", "op:full", "op:arange", "op:eye", "op:setitem",
    *(f"operator.{op}" for op in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs")),
    *(f"numpy.{fn}" for fn in (
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "isnan", "isinf",
        "isfinite", "isneginf", "isposinf", "signbit", "logical_and", "logical_or",
        "logical_xor", "logical_not", "where", "absolute", "abs", "fabs", "negative",
        "positive", "copysign", "maximum", "minimum", "fmax", "fmin", "floor", "ceil", "trunc",
        "rint", "sign", "clip", "max", "min", "amax", "amin", "argmax", "argmin", "nanargmax",
        "nanargmin", "any", "all")),
    *(f"method:{m}" for m in ("max", "min", "argmax", "argmin", "any", "all", "clip")),
    *(f"op:{op}" for op in ("lt", "le", "gt", "ge", "eq", "ne", "neg", "abs", "where",
                             "isnan", "isinf", "isfinite", "signbit", "copysign", "maximum",
                             "minimum", "fmax", "fmin", "floor", "ceil", "trunc", "rint",
                             "sign", "max", "min", "argmax", "argmin", "any", "all",
                             "logical_and", "logical_or", "logical_xor", "logical_not")),
})
#: item assignments: they cast their values to the array's dtype
SETITEMS = frozenset({"stax.functional.setitem", "op:setitem"})
#: integer operations NumPy reports events for: division and remainder by zero, MIN // -1, and
#: the overflow of Python operators on NumPy integer scalars (``SCALAR_OPERATORS``)
INTEGER_EVENTS = frozenset({
    "operator.floordiv", "operator.mod", "numpy.floor_divide", "numpy.remainder", "numpy.mod",
    "numpy.fmod", "numpy.divmod", "numpy.reciprocal", "op:floordiv", "op:mod", "op:reciprocal",
    *SCALAR_OPERATORS,
})


def _call_name(node: Node) -> str:
    if node.op is Opcode.CALL_METHOD:
        return f"method:{node.target}"
    if node.graph.dialect != "op":
        return node.target
    if node.target == "extern":  # a NumPy call inside the op graph
        fn = node.kwargs.get("fn", "")
        return f"method:{fn}" if node.kwargs.get("method") else fn
    return f"op:{node.target}"


def may_raise_events(node: Node) -> bool:
    """Whether computing ``node`` may raise a floating-point event NumPy reports: a call on
    array operands of which one (or its result) is a float or complex, or an integer division
    (``INTEGER_EVENTS``), unless the call never reports (``NO_EVENTS``, on real numbers), makes
    a view or a result whose shape depends on the data. A call with no array operand does not:
    capture refuses one that reports (its events would not come again)."""
    if node.op not in (Opcode.CALL_FUNCTION, Opcode.CALL_METHOD) or node.effectful:
        return False
    if node.tensor is None and "sequence" not in node.meta:
        return False  # not an array (lowering has nothing to compute)
    if node.meta.get("view") is not None or node.meta.get("shape_gated"):
        return False
    operands = node.inputs
    if not operands:
        return False
    kinds = {_kind(m) for m in (node.tensor, *(n.tensor for n in operands))}
    name = _call_name(node)
    if name in SETITEMS and _kind(node.tensor) in ("i", "u") and kinds & {"f", "c"}:
        return True  # float values cast into an integer array: NaN or out of range is invalid
    if name in NO_EVENTS and "c" not in kinds:  # np.abs of a complex computes a hypot
        return False
    return bool(kinds & {"f", "c"}) or name in INTEGER_EVENTS


def may_raise_on_data(node: Node) -> bool:
    """Whether NumPy may raise an exception computing ``node``, depending on the data: an item
    assignment with an array key (a boolean mask whose count of True differs from the values',
    an index out of bounds). Kept unused, like steps with events, so the call raises as NumPy's.
    So is a precondition of the compiled program (``decline_if``: the call declines where it
    fails), and a read at a slice whose bounds are a lifted loop's traced integers: its length
    is what capture saw only where its precondition holds, which the program checks even when
    only the length is used (``len(x[i:j])``)."""
    if node.op is not Opcode.CALL_FUNCTION:
        return False
    name = _call_name(node)
    if name in ("stax.functional.decline_if", "op:decline_if"):
        return True
    if name == "operator.getitem" and len(node.args) > 1:
        return any(isinstance(k, slice) and any(isinstance(b, Node) for b in (k.start, k.stop))
                   for k in _leaves(node.args[1]))
    if name not in ("stax.functional.setitem", "stax.functional.add_at",
                    "stax.functional.subtract_at"):
        return False
    return len(node.args) > 1 and any(isinstance(a, Node) for a in _leaves(node.args[1]))


def _leaves(value: object) -> list[object]:
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _kind(meta: TensorMeta | None) -> str:
    try:
        return np.dtype(meta.dtype).kind if isinstance(meta, TensorMeta) else ""
    except TypeError:  # a dtype NumPy does not name
        return ""


@dataclass
class DCE:
    name: str = "DCE"
    last_summary: str = field(default="", compare=False)

    def run(self, graph: Graph) -> bool:
        removed, kept = [], []
        for node in reversed(list(graph.nodes)):
            if node.users or node.op in (Opcode.PLACEHOLDER, Opcode.OUTPUT):
                node.meta.pop(EVENTS_ONLY, None)  # used (again): an ordinary value
                continue
            if node.effectful:  # a draw advances its generator: a side effect
                continue
            if may_raise_events(node) or may_raise_on_data(node):
                if not node.events_only:
                    node.meta[EVENTS_ONLY] = True
                    kept.append(node.name)
                continue
            removed.append(node.name)
            graph.erase_node(node)
        notes = []
        if removed:
            notes.append("removed " + ", ".join(f"%{n}" for n in reversed(removed)))
        if kept:
            notes.append("kept for their floating-point events: " +
                         ", ".join(f"%{n}" for n in reversed(kept)))
        self.last_summary = "; ".join(notes)
        return bool(removed or kept)
