"""Data gates checked by the compiled program itself (issue 14), instead of replayed in NumPy.

A version with gates (spec §3.5) applies to a call only when each gate's value on the call's
inputs equals the traced one. ``GateReplay`` finds that out by running the gates' backward
slice through the NumPy reference interpreter before the kernels run: the slice is computed
twice, once in NumPy (a stencil-then-max gate cost 1.8 ms of replay for 0.26 ms of kernels).

Here the gate values are extra outputs of the compiled program: the kernels compute them once,
with everything else, and the runner compares them before it returns anything or writes any
argument back; a mismatch raises ``GateMismatch`` and the dispatcher tries the function's other
versions (or compiles one), as a failed replay did.

That is sound only where the program computes each gate value bit for bit as NumPy does: a
branch taken on a sum rounded in another order could differ from eager's on a near tie. So a
capture's gates are compiled only when every node of their slice is exact (``exactness``):
IEEE element-wise operations, comparisons, selections and views, extremes (max, min, argmax,
argmin, any, all) and integer sums in the kernels; float sums, products, means, variances as
NumPy's own calls (extern steps) on arrays laid out as eager's were; a transcendental function
or anything else keeps the replay. Gates whose value is a whole list or a data-dependent shape
are replayed too, but for shapes a boolean mask's count decides (``len(x[x > 0])``,
``x[m].shape``, ``np.nonzero(m)``, ``np.flatnonzero(m)``: ``counted_shape``): the program
computes the mask's count instead (an integer sum, exact), and the check compares the shape it
makes with the traced one; the selection itself is not computed for the gate at all (it cost a
NumPy selection per call, replayed before the kernels).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from stax.codegen.cpu.entry_gates import EntryGate
from stax.ir import (
    GATE_CONVERSIONS,
    LIFTED_LOOP,
    GraphProgram,
    StaxError,
    TensorMeta,
    ancestors,
    contiguous_strides,
)
from stax.ir.graph import Node, Opcode
from stax.ir.ops import approximate_ops, capture_targets_of, comparison_ops, elementwise_ops

from .gates import same_outcome

#: gate kinds checked in the program: branches. A value read into Python (``int(x.argmax())``)
#: takes many values, each a version the call would try in turn, running each program: their
#: replay costs less; ``tolist``, ``shape`` and ``shapes`` gates are replayed too
COMPILED_KINDS = frozenset({"bool"})


def compiled_kind(kind: str, node: Node | None) -> bool:
    """Whether a gate of ``kind`` on ``node`` is checked in the program: a branch, or an int
    read of a choice between two constants (``np.where(c, -1, 0)``: builtin ``min(1.0, t)``
    recording which side it returned, ``minmax.py``), which has two values, as a branch."""
    if kind in COMPILED_KINDS:
        return True
    return kind in ("int", "index") and node is not None and node.target == "numpy.where" and \
        len(node.args) == 3 and not node.kwargs and \
        all(type(a) in (int, bool) for a in node.args[1:])
#: capture targets whose results are NumPy's bit for bit, whatever the dtype (not argmax and
#: argmin: exact, but one serial kernel each, slower than NumPy's replay)
_EXACT_TARGETS = capture_targets_of((elementwise_ops() - approximate_ops()) | {"any", "all"}) | {
    "operator.getitem", "numpy.reshape", "numpy.transpose", "numpy.ravel", "numpy.squeeze",
    "numpy.expand_dims", "numpy.swapaxes", "numpy.moveaxis", "numpy.broadcast_to",
    "method:reshape", "method:ravel", "method:flatten", "method:transpose", "method:squeeze",
    "method:swapaxes", "method:astype", "method:copy", "numpy.where", "numpy.abs",
    "numpy.absolute", "numpy.clip", "method:clip",
    # rint(x * 10**d) / 10**d as NumPy computes it (``to_opgraph._round``), or NumPy's own call
    "numpy.round", "numpy.around", "method:round",
    # constants and copies: local arrays, arrays built from traced values, running extremes
    "numpy.zeros", "numpy.zeros_like", "numpy.ones", "numpy.ones_like", "numpy.full",
    "numpy.full_like", "numpy.eye", "numpy.identity", "numpy.array", "numpy.asarray",
    "numpy.stack", "numpy.concatenate", "numpy.hstack", "numpy.vstack", "numpy.copy",
    "numpy.ascontiguousarray", "numpy.flip", "numpy.roll", "numpy.tile", "numpy.repeat",
    "numpy.diff", "numpy.maximum.accumulate", "numpy.minimum.accumulate", "numpy.diag",
    "numpy.diagflat",
    "numpy.diagonal", "method:diagonal",
    "stax.functional.setitem", "stax.functional.decline_if"}
#: NumPy functions whose bits do not depend on the layout of what they read (sorting,
#: selecting, interpolating between order statistics): run as NumPy's own calls, they are
#: exact on exact operands, whatever the program's layouts
_NUMPY_CALL_TARGETS = frozenset({
    "numpy.percentile", "numpy.quantile", "numpy.median", "numpy.nanpercentile",
    "numpy.nanquantile", "numpy.nanmedian", "numpy.sort", "method:sort", "numpy.partition"})
#: extremes: exact but for the sign of a float zero (NumPy's max of [0.0, -0.0] is -0.0, the
#: kernels' may be 0.0): exact in integers, and where only comparisons read them
_EXTREME_TARGETS = capture_targets_of({"max", "min"})
_COMPARISONS = capture_targets_of(comparison_ops())
#: sums and products: exact in integers (wrapping as NumPy's), not in floats (rounding order)
_INTEGER_EXACT_TARGETS = capture_targets_of({"sum", "prod"}) | {"numpy.count_nonzero"}
#: float reductions rounded in an order of NumPy's choosing (pairwise sums): in a gate's slice
#: they run as NumPy's own call (meta ``numpy_call``, an extern step), exact where the array
#: they read is laid out as eager's was (``_as_eager``)
_NUMPY_ORDER_TARGETS = capture_targets_of({"sum", "prod", "mean", "var", "std"})
#: matrix products: BLAS's order (blocked, FMA), exact as NumPy's own call on operands laid out
#: as eager's were (a Jacobi iteration's ``R @ x`` before its ``while`` test)
_PRODUCT_TARGETS = frozenset({"operator.matmul", "numpy.matmul", "numpy.dot", "method:dot"})


class GateMismatch(StaxError):
    """A compiled version's gates took another branch on this call's inputs: it does not apply
    (nothing was returned or written back); the dispatcher looks for the version that does.
    ``outcomes``: the call's gate outcomes, where the program computed them (``GateCheck``)."""

    def __init__(self, message: str, outcomes: list[Any] | None = None) -> None:
        super().__init__(message)
        self.outcomes = outcomes


def inexact_node(capture: GraphProgram) -> Node | None:
    """The first node of the gates' slice whose compiled value may differ from NumPy's in its
    last bits, or a gate of a kind read from more than one value; None when none is."""
    return exactness(capture)[0]


#: positions of the true elements: one index array per dimension (``shapes`` gates), or the flat
#: ones (a ``shape`` gate), as many as the mask's count
_POSITIONS = {"numpy.nonzero": "shapes", "method:nonzero": "shapes", "numpy.where": "shapes",
              "numpy.flatnonzero": "shape", "numpy.argwhere": "shape"}


def counted_shape(node: Node, kind: str) -> tuple[Node, Callable[[int], Any]] | None:
    """``(m, value)`` when the gate of ``kind`` on ``node`` reads a shape that a boolean array
    ``m``'s count decides, ``value(count)`` being what the gate read: a selection ``a[m]`` over
    ``a``'s leading dimensions (``(count, *trailing)``), the positions of ``m``'s true elements
    (``np.nonzero(m)``, one-argument ``np.where``: ``[(count,)] * m.ndim``;
    ``np.flatnonzero``: ``(count,)``; ``np.argwhere``: ``(count, m.ndim)``). None otherwise."""
    if node.op is Opcode.CALL_METHOD and node.target == "nonzero":
        target = "method:nonzero"
    elif node.op is Opcode.CALL_FUNCTION:
        target = node.target
    else:
        return None
    if not node.args or not all(isinstance(a, Node) for a in node.args) or node.kwargs:
        return None
    mask = node.args[-1] if target == "operator.getitem" else node.args[0]
    if mask.tensor is None or mask.tensor.dtype != "bool" or not mask.tensor.shape:
        return None
    rank = len(mask.tensor.shape)
    if target == "operator.getitem" and kind == "shape" and len(node.args) == 2:
        array = node.args[0].tensor
        if array is None or tuple(array.shape[:rank]) != tuple(mask.tensor.shape):
            return None
        trailing = tuple(array.shape[rank:])
        return mask, lambda count: (count, *trailing)
    if _POSITIONS.get(target) != kind or len(node.args) != 1:
        return None
    if kind == "shapes":
        return mask, lambda count: [(count,)] * rank
    if target == "numpy.argwhere":
        return mask, lambda count: (count, rank)
    return mask, lambda count: (count,)


def _gate_roots(capture: GraphProgram, by_name: dict[str, Node]) -> set[str] | None:
    """The names of the nodes the gates' checks read (a mask selection's gate: its mask), or
    None when a gate is of a kind the program does not check."""
    roots = set()
    for gate in capture.gates:
        node = by_name.get(gate.node)
        counted = counted_shape(node, gate.kind) if node is not None else None
        if node is None or (not compiled_kind(gate.kind, node) and counted is None):
            return None
        roots.add(counted[0].name if counted is not None else node.name)
    return roots


def exactness(capture: GraphProgram) -> tuple[Node | None, list[str]]:
    """``inexact_node``, and the float reductions of the slice that must run as NumPy's own
    calls for the gates to be exact (names of capture nodes)."""
    if capture.replay is None or not capture.gates:
        return None, []
    by_name = {node.name: node for node in capture.graph.nodes}
    roots = _gate_roots(capture, by_name)
    if roots is None:
        first = next((by_name.get(g.node) for g in capture.gates
                      if not compiled_kind(g.kind, by_name.get(g.node))), None)
        return first or capture.graph.output_node, []
    # a selection's gate reads its mask, not what it selects
    read = {n.name for n in _read_by(by_name[r] for r in roots)}
    numpy_calls = []
    for node in capture.replay.nodes:
        if node.op in (Opcode.PLACEHOLDER, Opcode.OUTPUT) or node.name not in read:
            continue
        target = _target(node)
        if target in _EXACT_TARGETS or target == LIFTED_LOOP or _exact_power(node):
            continue
        meta = node.tensor
        integer = meta is not None and np.dtype(meta.dtype).kind in "biu"
        if target in _EXTREME_TARGETS and (
                integer or all(_target(u) in _COMPARISONS for u in node.users)):
            continue
        if target in _INTEGER_EXACT_TARGETS and integer:
            continue
        as_numpy = target in _NUMPY_CALL_TARGETS or (
            target in _NUMPY_ORDER_TARGETS and bool(node.args) and _as_eager(node.args[0])) or (
            target in _PRODUCT_TARGETS and len(node.args) == 2 and not node.kwargs and
            all(_as_eager(a) for a in node.args))
        if as_numpy and node.name in by_name:
            numpy_calls.append(node.name)
            continue
        return node, []
    return None, numpy_calls


def _read_by(roots: Any) -> set[Node]:
    """The nodes gate values are computed from: their ancestors, but for what a lifted loop
    reads. A lifted loop's results are the program's own, whatever NumPy would compute (its
    tests are the kernels', as its count is: user guide, "A lifted loop's tests are the
    kernels'"), so a gate on them (``if np.any(x < 0)`` after a solver's loop, the counter's
    ``if it == maxit``) is decided by the values the function returns; replayed, it ran the
    whole loop in NumPy before each call (a 50x50 Jacobi: 100 us a call, NumPy's own 90)."""
    return ancestors(roots, through=lambda node: node.target != LIFTED_LOOP)


def _exact_power(node: Node) -> bool:
    """``x ** 2``, ``x ** 0.5``, ``x ** -1`` of floats and ``x ** 3``, ``x ** 4`` of integers:
    NumPy's square, sqrt and reciprocal, the capture rule's too (``to_opgraph._power``)."""
    if node.target not in ("operator.pow", "numpy.power") or len(node.args) != 2 or \
            node.kwargs or not isinstance(node.args[1], (int, float)) or \
            isinstance(node.args[1], bool) or node.tensor is None:
        return False
    e, kind = float(node.args[1]), np.dtype(node.tensor.dtype).kind
    return (e == 2.0 and kind in "iuf") or (e in (0.5, -1.0) and kind == "f") or \
        (e in (3.0, 4.0) and kind in "iu")


def _target(node: Node) -> str:
    return f"method:{node.target}" if node.op is Opcode.CALL_METHOD else node.target


def _as_eager(operand: object) -> bool:
    """Whether NumPy reading ``operand`` in the compiled program reads it as eager did: the
    argument itself, or a C-contiguous value (a kernel's result is; eager's is when its
    recorded strides say so: ``x.T * 2`` is F-ordered in NumPy, and summed in another order)."""
    if not isinstance(operand, Node):
        return False
    if operand.op is Opcode.PLACEHOLDER:
        return True
    meta = operand.tensor
    return meta is not None and all(size <= 1 or stride == c for size, stride, c in
                                    zip(meta.shape, meta.strides, contiguous_strides(meta.shape)))


def program_gates(capture: GraphProgram, log: Callable[[str], None]) -> list[str] | None:
    """Where ``capture``'s gates are checked by its compiled program, the float reductions of
    their slice that run as NumPy's own calls (``with_gate_outputs``); None where they are
    replayed. The decision is logged."""
    node, numpy_calls = exactness(capture)
    where = f" ({node.source})" if node is not None and node.source else ""
    kinds = {g.node: g.kind for g in capture.gates}
    why = f"Python reads its {kinds[node.name]}" if node is not None and \
        not compiled_kind(kinds.get(node.name, "bool"), node) else \
        "may round otherwise in the kernels"
    log(f"{capture.name}: {len(capture.gates)} data gate(s) checked in the compiled program"
        if node is None else
        f"{capture.name}: data gates replayed in NumPy before each call: %{node.name} "
        f"({node.target}){where}: {why}")
    return numpy_calls if node is None else None


def with_gate_outputs(capture: GraphProgram, numpy_calls: list[str]) -> GraphProgram:
    """A copy of ``capture`` whose flat outputs end with its gates' values, in gate order, and
    whose float reductions ``numpy_calls`` (named by ``program_gates``) run as NumPy's own
    calls."""
    copy = GraphProgram.from_json(capture.to_json(), capture.schema)
    by_name = {node.name: node for node in copy.graph.nodes}
    for name in numpy_calls:
        by_name[name].meta["numpy_call"] = True
    output = copy.graph.output_node
    values = []
    for gate in copy.gates:
        node = by_name[gate.node]
        counted = counted_shape(node, gate.kind) if gate.kind not in COMPILED_KINDS else None
        if counted is not None:  # the mask's count, not the selection (GateCheck)
            with copy.graph.inserting_before(output):
                node = copy.graph.create_node(
                    Opcode.CALL_METHOD, "sum", (counted[0],), meta={
                        "tensor": TensorMeta((), "int64", (), scalar=True),
                        "source": node.source})
        values.append(node)
    output.set_args((tuple(output.args[0]) + tuple(values),))
    return copy


class GateCheck:
    """Compares a call's gate values with the traced outcomes (``GateMismatch`` when they
    differ); ``passed`` counts the calls that matched. ``active`` is cleared when the program's
    values differ from NumPy's on the inputs it was traced on (a compiler defect: its gates
    are then replayed, and the values not compared); ``live`` says so to a machine-code entry
    that tests them itself (``entry_gates``)."""

    def __init__(self, capture: GraphProgram) -> None:
        by_name = {node.name: node for node in capture.graph.nodes}
        self.checks = [(_conversion(g.kind, by_name.get(g.node)), g.value) for g in capture.gates]
        self._kinds = [g.kind for g in capture.gates]
        #: read by a machine-code entry testing the gates: nonzero while active, and the
        #: calls it found to match (``stax.codegen.cpu.entry_gates``)
        self.live = np.array([1, 0], np.int64)
        self._passed = 0

    @property
    def passed(self) -> int:
        return self._passed + int(self.live[1])

    @property
    def active(self) -> bool:
        return bool(self.live[0])

    @active.setter
    def active(self, value: bool) -> None:
        self.live[0] = int(value)

    def entry_gates(self) -> tuple[EntryGate, ...] | None:
        """What a machine-code entry compares each gate's program value with, or None where
        one is read as something it does not compare (a list): the bool a branch took; the
        count a mask's shape was made from (``counted_shape``); an int an integer read."""
        gates = []
        for kind, (convert, expected) in zip(self._kinds, self.checks):
            if convert is GATE_CONVERSIONS["bool"] and type(expected) is bool:
                gates.append(EntryGate("truth", expected))
            elif kind in ("int", "index") and convert is GATE_CONVERSIONS[kind] and \
                    type(expected) is int:
                gates.append(EntryGate("equal", expected))
            elif convert is not GATE_CONVERSIONS.get(kind):  # a shape from a count
                count = _first_int(expected)
                if count is None or not same_outcome(convert(count), expected):
                    return None
                gates.append(EntryGate("equal", count))
            else:
                return None
        return tuple(gates)

    def testing(self, make_entry: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
        """``make_entry`` (an executable's ``entry``), the machine-code entry it makes testing
        these gates itself (``entry_gates``), and whether it does: as it is, and False, where
        the entry cannot test them."""
        gates = self.entry_gates()
        if gates is None:
            return make_entry, False
        return functools.partial(make_entry, gates=gates, live=self.live), True

    def __call__(self, *values: Any) -> None:
        if not self.active:
            return
        for (convert, expected), value in zip(self.checks, values):
            if not same_outcome(convert(value), expected):
                raise GateMismatch("a data gate took another branch", _outcomes(self.checks, values))
        self._passed += 1


def _first_int(value: Any) -> int | None:
    """The first ``int`` in a shape, or in a list of shapes (a count's shape: ``counted_shape``)."""
    if type(value) is int:
        return value
    if isinstance(value, (tuple, list)) and value:
        return _first_int(value[0])
    return None


def _outcomes(checks: list[tuple[Callable[[Any], Any], Any]], values: tuple[Any, ...]
              ) -> list[Any] | None:
    """Every gate's outcome (``GateMismatch.outcomes``), or None where one has none (a NaN read
    as an int)."""
    try:
        return [convert(value) for (convert, _), value in zip(checks, values)]
    except (TypeError, ValueError, OverflowError):
        return None


def _conversion(kind: str, node: Node | None) -> Callable[[Any], Any]:
    """How a gate's program value becomes the value Python read: a shape from the mask's count
    (``with_gate_outputs``)."""
    counted = counted_shape(node, kind) if node is not None and kind not in COMPILED_KINDS \
        else None
    if counted is None:
        return GATE_CONVERSIONS[kind]
    value = counted[1]
    return lambda count: value(int(count))


def check_in_program(executable: Any, call_flat: Callable[..., list[Any]],
                     capture: GraphProgram) -> tuple[Callable[..., list[Any]], GateCheck]:
    """``call_flat`` of the program ``with_gate_outputs`` made, returning the capture's own
    outputs, its gates checked by a ``GateCheck``: inside the executable's call where it takes
    one (``Executable.check_gates``: before its checks, events and NumPy's warnings), after the
    call otherwise (another backend's)."""
    check, count = GateCheck(capture), len(capture.gates)
    if hasattr(executable, "check_gates"):
        executable.check_gates(count, check)
        run = executable.run
        return (lambda *arrays: run(*arrays)[:-count]), check

    def checked(*arrays: Any) -> list[Any]:
        flat = call_flat(*arrays)
        check(*flat[-count:])
        return flat[:-count]
    return checked, check
