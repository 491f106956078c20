"""Data gates checked by the compiled program itself (issue 14), instead of replayed in NumPy.

A version with gates (spec §3.5) applies to a call only when each gate's value on the call's
inputs equals the traced one. ``GateReplay`` finds that out by running the gates' backward
slice through the NumPy reference interpreter before the kernels run: the slice is computed
twice, once in NumPy (a stencil-then-max gate cost 1.8 ms of replay for 0.26 ms of kernels).

Here the gate values are extra outputs of the compiled program: the kernels compute them once,
with everything else, and the runner compares them before it returns anything or writes any
argument back; a mismatch raises ``GateMismatch`` and the dispatcher tries the function's other
versions (or compiles one), as a failed replay did.

That is sound only where the kernels compute each gate value bit for bit as NumPy does: a
branch taken on a sum rounded in another order could differ from eager's on a near tie. So a
capture's gates are compiled only when every node of their slice is exact (``inexact_node``):
IEEE element-wise operations, comparisons, selections and views, extremes (max, min, argmax,
argmin, any, all) and integer sums; a float sum or mean, a transcendental function or anything
else keeps the replay. Gates whose value is a whole list or a data-dependent shape are replayed
too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stax.ir import GATE_CONVERSIONS, GraphProgram, StaxError
from stax.ir.graph import Node, Opcode
from stax.ir.ops import approximate_ops, capture_targets_of, elementwise_ops

from .gates import same_outcome

#: gate kinds read from one value (``tolist``, ``shape`` and ``shapes`` stay replayed)
COMPILED_KINDS = frozenset({"bool", "int", "float", "index", "item"})
#: capture targets whose results are NumPy's bit for bit, whatever the dtype
_EXACT_TARGETS = capture_targets_of((elementwise_ops() - approximate_ops()) |
                                    {"max", "min", "argmax", "argmin", "any", "all"}) | {
    "operator.getitem", "numpy.reshape", "numpy.transpose", "numpy.ravel", "numpy.squeeze",
    "numpy.expand_dims", "numpy.swapaxes", "numpy.moveaxis", "numpy.broadcast_to",
    "method:reshape", "method:ravel", "method:flatten", "method:transpose", "method:squeeze",
    "method:swapaxes", "method:astype", "method:copy", "numpy.where", "numpy.abs",
    "numpy.absolute", "numpy.clip", "method:clip"}
#: sums and products: exact in integers (wrapping as NumPy's), not in floats (rounding order)
_INTEGER_EXACT_TARGETS = capture_targets_of({"sum", "prod"})


class GateMismatch(StaxError):
    """A compiled version's gates took another branch on this call's inputs: it does not apply
    (nothing was returned or written back); the dispatcher looks for the version that does."""


def inexact_node(capture: GraphProgram) -> Node | None:
    """The first node of the gates' slice whose compiled value may differ from NumPy's in its
    last bits, or a gate of a kind read from more than one value; None when none is."""
    if capture.replay is None or not capture.gates:
        return None
    by_name = {node.name: node for node in capture.graph.nodes}
    for gate in capture.gates:
        if gate.kind not in COMPILED_KINDS or gate.node not in by_name:
            return by_name.get(gate.node) or capture.graph.output_node
    for node in capture.replay.nodes:
        if node.op in (Opcode.PLACEHOLDER, Opcode.OUTPUT):
            continue
        target = f"method:{node.target}" if node.op is Opcode.CALL_METHOD else node.target
        if target in _EXACT_TARGETS:
            continue
        meta = node.tensor
        if target in _INTEGER_EXACT_TARGETS and meta is not None and meta.dtype in _INTEGERS:
            continue
        return node
    return None


def gates_in_program(capture: GraphProgram, log: Callable[[str], None]) -> bool:
    """Whether ``capture``'s gates are checked by its compiled program; the decision logged."""
    node = inexact_node(capture)
    where = f" ({node.source})" if node is not None and node.source else ""
    log(f"{capture.name}: {len(capture.gates)} data gate(s) checked in the compiled program"
        if node is None else
        f"{capture.name}: data gates replayed in NumPy before each call: %{node.name} "
        f"({node.target}){where} may round otherwise in the kernels")
    return node is None


_INTEGERS = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                       "uint64"})


def with_gate_outputs(capture: GraphProgram) -> GraphProgram:
    """A copy of ``capture`` whose flat outputs end with its gates' values, in gate order."""
    copy = GraphProgram.from_json(capture.to_json(), capture.schema)
    by_name = {node.name: node for node in copy.graph.nodes}
    output = copy.graph.output_node
    output.set_args((tuple(output.args[0]) + tuple(by_name[g.node] for g in copy.gates),))
    return copy


def gated(run_flat: Callable[..., list[Any]], capture: GraphProgram
          ) -> Callable[..., list[Any]]:
    """``run_flat`` of the program ``with_gate_outputs`` made, returning the capture's own
    outputs once every gate value equals the traced one, else raising ``GateMismatch``."""
    count = len(capture.gates)
    checks = [(GATE_CONVERSIONS[g.kind], g.value) for g in capture.gates]

    def run(*arrays: Any) -> list[Any]:
        flat = run_flat(*arrays)
        for (convert, expected), value in zip(checks, flat[-count:]):
            if not same_outcome(convert(value), expected):
                raise GateMismatch("a data gate took another branch")
        return flat[:-count]
    return run
