"""Floating-point events in kernels: NumPy's error state (``np.errstate``) honoured natively.

NumPy checks the CPU's exception flags after every ufunc and, per category (divide by zero,
overflow, underflow, invalid), ignores, warns, raises, calls a function or logs. A kernel reports
the events of its operations into an int32 ``events`` buffer (its last array argument, ORed into
once per chunk, atomically: threads running chunks of one launch share it); the executable then
declines a call whose events NumPy's state does not ignore, and the runtime runs it eagerly, so
NumPy itself warns, raises or calls, with its messages (``executable.py``, ``errstate.py``).

What an event is, per loop-IR operation, is defined *semantically* on its operands and result,
as IEEE 754 defines the exceptions:

- invalid: a NaN result from operands none of which is NaN (``sqrt(-1)``, ``inf - inf``,
  ``0 / 0``, ``sin(inf)``);
- divide by zero / overflow: an infinite result from finite operands (``1 / 0``, ``log(0)``,
  ``exp(1000)``, a float64 -> float32 cast of 1e300); which of the two is in ``OPERATIONS``
  (``x / 0`` is a division by zero, ``x / 1e-300`` an overflow);
- integer ``//`` and ``%`` by zero (divide by zero, as NumPy) and ``MIN // -1`` (overflow),
  exact in every kernel.

Probed against NumPy on every element-wise function and pair of special values (the tests hold
the table), these give NumPy's warnings; where they are wider (``2 ** inf`` says overflow, NumPy
is silent) a call runs eagerly more often than it must. Comparisons, ``isnan``, ``where`` and
``maximum`` report nothing: NaN data alone never makes a call eager, and a fast kernel that
reads the CPU's flags compares quietly (``ordered``), so NaN data alone does not make it say
``MAYBE`` either.

One more bit is not NumPy's: ``TIE``, an fmax/fmin of 0.0 and -0.0 (or of two different NaNs),
whose result NumPy leaves to its loops' order (``stax.loop.bits.fmax_select``); every kernel
kind reports it exactly, in the pass that computes the fmax, and the call runs as NumPy.

The exact test costs ~10 instructions per operation (measured: GELU 1.6x, layer norm 1.9x), so
each fused group is emitted twice:

- the *fast* kernel (the one that runs) only proves that no event happened, else reports
  ``MAYBE``. On x86-64 it reads the CPU's exception flags (MXCSR): cleared if set where the
  kernel starts, read where it ends, both behind a memory barrier, so every operation whose
  result reaches memory is in between (LLVM may move arithmetic, never past the stores it feeds).
  (The functions of ``NAN_QUIET`` are tested where computed instead, NaN operands excused:
  ``_tests_itself``.)
  A single IEEE operation (``+ - * /``, ``sqrt``, a narrowing cast: ``flagged``) raises exactly
  its events there, and its underflow exactly as NumPy's loops do. A transcendental's events need
  not raise a flag (its polynomial makes ``exp(1000)`` an infinity from bits), so those are
  tested: every event leaves a value infinite or NaN, and a non-finite operand of ``+ - *``,
  a numerator, ``sqrt``, ``log`` and the other ``PRESERVES`` operations gives a non-finite
  result, so it is enough to test the values where such a chain ends: stored, or read by an
  operation that may lose an infinity (``where``, ``maximum``, ``exp``, a comparison). A test is
  ``acc |= bits(v - v)``: ``v - v`` is +0.0 for a finite ``v``, else NaN; two instructions. Where
  the flags are not read (other CPUs) every event is tested this way. Measured against the
  same kernels without events (2-core Xeon, AVX-512, interleaved runs): ``x + 1`` on one
  element, the 20-op chain, example 1.1, GELU, layer norm and softmax within the noise (about
  +-3%); softmax (64, 1000) tests one value per element, after ``exp``.
- the *precise* kernel (same loops and stores) checks every operation exactly and reports the
  categories. It is compiled only when a call first reports ``MAYBE`` (a non-finite value where
  one is tested, or a real event); that call runs again with it, and the executable's next calls
  start with it (``executable.PRECISE_FIRST_CALLS``): such data tends to come back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from llvmlite import ir

from stax.loop import (
    Binary,
    Cast,
    ComputedBuffer,
    Const,
    Expr,
    GuardedLoad,
    Index,
    IndirectLoad,
    Load,
    Pointwise,
    Reduction,
    Scan,
    Select,
    Ternary,
    Unary,
    postorder,
)
from stax.loop.bits import fmax_operands
from stax.loop.expr import COMPARISON_OPS
from stax.loop.intervals import integer_interval
from stax.loop.operators import DIVIDE as DIVIDE
from stax.loop.operators import INVALID as INVALID
from stax.loop.operators import OPERATORS, OVERFLOW, Events
from stax.loop.operators import UNDERFLOW as UNDERFLOW

from .types import I8P, is_float

# NumPy's status bits DIVIDE, OVERFLOW, UNDERFLOW, INVALID (the categories of np.errstate) and
# each operator's events are declared with the loop operators: facts of NumPy's, not of this
# target. The rest of the backend imports the bits from here.
MAYBE = 16  # the fast kernel saw a non-finite value: the precise kernel says which events
#: an fmax/fmin met a tie of different bits (0.0 and -0.0, two different NaNs), whose answer
#: NumPy leaves to the order of its loops (``stax.loop.bits.fmax_select``): the call runs as NumPy.
#: Every kernel kind reports it exactly, in the pass that computes the fmax.
TIE = 32
I32 = ir.IntType(32)

#: per loop-IR operation with a float result, what NumPy may report computing it (the
#: operators' declarations, ``stax.loop.operators``); operations absent here report nothing
OPERATIONS: dict[str, Events] = {name: op.events for name, op in OPERATORS.items()
                                 if op.events is not None}
NARROWING = Events(OVERFLOW)  # a float64 -> float32 cast
#: single IEEE operations: on x86-64 their events are exactly the CPU's exception flags
IEEE = frozenset({"add", "sub", "mul", "truediv", "sqrt", "fma"})
#: operations whose float result is exact (never tiny and inexact): they cannot underflow
EXACT = frozenset(name for name, op in OPERATORS.items() if op.exact)
# MXCSR: the sticky exception flags (invalid, denormal, divide, overflow, underflow, precision)
MXCSR_FLAGS = 0x3F
MXCSR_EVENTS = 0x1 | 0x4 | 0x8  # invalid, divide by zero, overflow
MXCSR_UNDERFLOW = 0x10
#: each MXCSR flag and NumPy's status bit for it: what one IEEE operation's flags mean
MXCSR_CATEGORIES = ((0x1, INVALID), (0x4, DIVIDE), (0x8, OVERFLOW))
MXCSR_TINY = ((MXCSR_UNDERFLOW, UNDERFLOW),)
ACCUMULATION = Events(OVERFLOW, True)  # a step of a float sum or product

#: operations whose only event is their operand's infinity (``sin(inf)``: invalid) and whose
#: result from a finite operand is finite: a fast kernel tests that operand for +-inf
#: (``infinite_operand_tests``) instead of testing where their result's chain ends, where a
#: NaN of the data (``np.sin(x)`` of missing values: no event) looked like one and sent every
#: call to the precise kernels (a 3-element call 5.4 us against 0.4)
OPERAND_INFINITY = frozenset({"sin", "cos", "tan"})
#: operations whose result is infinite or NaN whenever the operand at these positions is
#: (``x / inf`` is 0 and ``exp(-inf)`` is 0: those lose it)
PRESERVES: dict[str, tuple[int, ...]] = {name: op.preserves for name, op in OPERATORS.items()
                                         if op.preserves}


def events_of(e: Expr) -> Events | None:
    """The events ``e`` may report (its float result against its operands), or None."""
    if not is_float(e.dtype):
        return None
    if isinstance(e, Cast):
        return NARROWING if (e.x.dtype, e.dtype) == ("float64", "float32") else None
    if isinstance(e, Unary | Binary | Ternary):
        if isinstance(e, Unary) and e.op == "bitcast" and (is_float(e.x.dtype) or
                                                           _finite_bits(e.x, e.dtype)):
            return None
        return OPERATIONS.get(e.op)
    return None


def _finite_bits(bits: Expr, dtype: str) -> bool:
    """Whether integer ``bits`` read as a ``dtype`` float are always a finite nonnegative
    number (a clamp, ``small_power32``'s): such a bitcast reports nothing."""
    held = integer_interval(bits, {})
    largest = int(np.array(np.finfo(dtype).max, dtype).view(f"u{np.dtype(dtype).itemsize}"))
    return held is not None and 0 <= held[0] and held[1] <= largest


def flagged(e: Expr) -> bool:
    """Whether the events of ``e`` raise the CPU's exception flags: a single IEEE operation
    (``IEEE``, a narrowing cast), whose events are exactly those flags."""
    return isinstance(e, Cast) or (isinstance(e, Unary | Binary | Ternary) and e.op in IEEE)


def flags_exact(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether the CPU's flags after a fast kernel computing ``nodes`` are exactly NumPy's
    events of its operations, so that the kernel may report them as their categories instead
    of ``MAYBE`` (no precise rerun: ``KernelSpec.flag_categories``). Element-wise buffers
    written whole, every operation a single IEEE one (its events are its flags) or one that
    raises none: loads, constants, indices, quiet comparisons, sign-bit ``neg``/``abs``,
    integer arithmetic, casts to floats (a narrowing one flags its overflow), and selects on
    data (``np.where``, whose arms NumPy computes everywhere). Not a select on positions (a
    region's update computes its value outside the region, where NumPy never does), guarded
    or indirect loads, max/min (``maxpd`` flags a quiet NaN as invalid), transcendental
    functions, reductions."""
    for n in nodes:
        if not isinstance(n.data, Pointwise) or n.updates is not None or \
                n.store_offset is not None:
            return False
        for e in postorder(n.data.body):
            if isinstance(e, GuardedLoad | IndirectLoad):
                return False
            if isinstance(e, Load | Const | Index):
                continue
            if isinstance(e, Select):
                if any(isinstance(c, Index) for c in postorder(e.cond)):
                    return False
                continue
            if isinstance(e, Cast):
                if is_float(e.dtype) or not is_float(e.x.dtype):
                    continue
                return False
            if isinstance(e, Binary) and (e.op in IEEE or e.op in COMPARISON_OPS or
                                          not (is_float(e.a.dtype) or is_float(e.b.dtype))):
                continue
            if isinstance(e, Unary) and (e.op in ("neg", "abs", "sqrt") or
                                         not is_float(e.x.dtype)):
                continue
            if isinstance(e, Ternary) and e.op in IEEE:
                continue
            return False
    return True


def may_underflow(e: Expr) -> bool:
    """Whether ``e`` may give a tiny inexact result (NumPy's underflow)."""
    if isinstance(e, Cast):
        return (e.x.dtype, e.dtype) == ("float64", "float32")
    return isinstance(e, Unary | Binary | Ternary) and is_float(e.dtype) and e.op not in EXACT


def reads_flags(nodes: Sequence[ComputedBuffer], triple: str) -> bool:
    """Whether the fast kernel computing ``nodes`` reads the CPU's exception flags: x86-64
    (MXCSR), with float arithmetic that may report events."""
    return triple.startswith("x86_64") and float_events(nodes)


def underflow_unseen(nodes: Sequence[ComputedBuffer], triple: str) -> bool:
    """Whether the kernel computing ``nodes`` may underflow without reporting it: it reports
    underflow only from the CPU's flags, and only where every operation that may underflow is a
    single IEEE one (a transcendental's polynomial may make a tiny result without the flag, or
    raise it for a result NumPy's does not). While NumPy's state does not ignore underflow, calls
    of a plan with such a kernel run eagerly (``errstate.py``)."""
    risky = [e for n in nodes for e in postorder(n.data.body) if may_underflow(e)]
    products = any(accumulates_floats(n) and (n.data.scan_type if isinstance(n.data, Scan)
                                              else n.data.reduction_type) == "prod" for n in nodes)
    if not risky and not products:
        return False
    return not (reads_flags(nodes, triple) and all(flagged(e) for e in risky))


def underflows_late(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether a late kernel (writing over an argument once the call stands, ``overwrites``)
    may underflow: it cannot decline the call, and a value with no twin (``x *= 0.25``, only
    underflow possible) has no earlier kernel reading its flags, so while NumPy's state heeds
    underflow such a plan's calls run eagerly."""
    return any(may_underflow(e) for n in nodes for e in postorder(n.data.body))


def integer_division(e: Expr) -> bool:
    return isinstance(e, Binary) and e.op in ("floordiv", "mod") and not is_float(e.dtype) and \
        e.dtype != "bool"


def accumulates_floats(node: ComputedBuffer) -> bool:
    """A float sum or product (a reduction or a scan): each step may overflow."""
    kind = node.data.scan_type if isinstance(node.data, Scan) else \
        node.data.reduction_type if isinstance(node.data, Reduction) else None
    return kind in ("sum", "prod") and is_float(node.dtype)


def has_events(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether a kernel computing ``nodes`` can report anything (it then takes ``events``)."""
    return float_events(nodes) or any(integer_division(e) or fmax_operands(e) is not None
                                      for n in nodes for e in postorder(n.data.body))


def float_events(nodes: Sequence[ComputedBuffer]) -> bool:
    """Whether a kernel computing ``nodes`` does float arithmetic that may report events (and
    underflow, which it does not detect)."""
    return any(accumulates_floats(n) or any(events_of(e) is not None
                                            for e in postorder(n.data.body)) for n in nodes)


def _preserves(parent: Expr, position: int) -> bool:
    if isinstance(parent, Cast):
        return is_float(parent.dtype) and is_float(parent.x.dtype)
    if isinstance(parent, Unary | Binary | Ternary):
        return position in PRESERVES.get(parent.op, ())
    return False


def _operand_infinity(e: Expr) -> bool:
    return isinstance(e, Unary) and e.op in OPERAND_INFINITY


def infinite_operand_tests(nodes: Sequence[ComputedBuffer]) -> set[int]:
    """The operations (by ``id``) of ``OPERAND_INFINITY`` whose operand a fast kernel tests for
    +-inf (their events exactly; a NaN operand is none)."""
    return {id(e) for node in nodes for e in postorder(node.data.body) if _operand_infinity(e)}


#: per dtype, the functions whose routines take a NaN operand without raising a flag: by
#: themselves (measured: their reductions compare quietly) or behind a shield
#: (``functions._shielded``: three instructions an element). Not exp, log, log2, log10, expm1,
#: log1p, pow: short routines where the shield cost 12-20% of a clean call (float32 softmax
#: (256, 1000) 29 -> 34 us, float64 exp of 1M elements 232 -> 269 us, AMD Zen 5); over NaN data
#: those still run again with the precise kernels (a tier of shielded fast kernels between the
#: two would serve both)
NAN_QUIET: dict[str, frozenset[str]] = {
    "float32": frozenset({"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
                          "hypot", "exp2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
                          "arctanh", "cbrt"}),
    "float64": frozenset({"sin", "cos", "tan", "cbrt", "exp2", "sinh", "cosh", "tanh",
                          "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
                          "arctan2", "hypot"}),
}
#: of them, those whose routines compare a NaN quietly themselves (no shield)
QUIET_ROUTINES: dict[str, frozenset[str]] = {
    "float32": frozenset({"sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
                          "hypot"}),
    "float64": frozenset({"sin", "cos", "tan", "cbrt"}),
}


def _tests_itself(e: Expr) -> bool:
    """A transcendental function of ``NAN_QUIET`` (``tanh``, ``arcsin``, ``cosh``, ...), which a
    fast kernel tests where it is computed: its result must be finite wherever no operand is
    NaN. Every event it has leaves a non-finite result from non-NaN operands, and a NaN operand
    makes none (a quiet NaN propagates), so NaN data (missing values) is no ``MAYBE``: tested
    where its chain ended, ``np.tanh(x) * 2`` over data with a NaN sent every call to the
    precise kernels (a 3-element call 4.7 us against 0.35). Not those NumPy reports for NaN
    operands too (``logaddexp``: every NaN result is invalid) or for finite results
    (``difference``)."""
    if not isinstance(e, Unary | Binary | Ternary) or e.op in IEEE or _operand_infinity(e) or \
            e.op not in NAN_QUIET.get(e.dtype, ()):
        return False
    spec = events_of(e)
    return spec is not None and spec.nan != "any" and not spec.difference


#: the attribute of a NaN-shielded routine's result (``functions._unshielded``, a select) that
#: holds the routine's own value: what the fast kernel tests of it
ROUTINE_VALUE = "stax_routine_value"


def self_tests(nodes: Sequence[ComputedBuffer]) -> set[int]:
    """The operations (by ``id``) a fast kernel tests where it computes them (``_tests_itself``)."""
    return {id(e) for node in nodes for e in postorder(node.data.body) if _tests_itself(e)}


def _compares(e: Expr) -> bool:
    """A comparison of float values (a cast to bool is one: ``!= 0``)."""
    if isinstance(e, Cast):
        return e.dtype == "bool" and is_float(e.x.dtype)
    return isinstance(e, Binary) and e.op in COMPARISON_OPS and is_float(e.a.dtype)


def _seen_through(e: Expr) -> list[Expr]:
    """``e`` and the operations a comparison of it reaches through sign changes and float
    widenings, which LLVM looks through (``abs(sqrt(x)) != 0`` is ``x != 0``)."""
    found = [e]
    while (isinstance(e, Unary) and e.op in ("abs", "neg")) or \
            (isinstance(e, Cast) and is_float(e.dtype) and is_float(e.x.dtype)):
        e = e.children()[0]
        found.append(e)
    return found


def lane_guards(e: Expr, memo: dict[int, tuple[Expr, ...]]) -> tuple[Expr, ...]:
    """The guards of the guarded loads ``e`` reads, not through a select: where they are false
    ``e`` is computed from a load's stand-in 0 (``x[:, 0] = a / b`` written into zeros is
    ``select(inside, a' / b', 0)``, ``a'`` and ``b'`` loads guarded by ``inside``), a value NumPy
    never computes, whose events are not the call's. A select ends them: its value is real on
    every lane (a concatenation's pieces are selected by their guards)."""
    found = memo.get(id(e))
    if found is None:
        if isinstance(e, GuardedLoad):
            found = (e.guard,)
        elif isinstance(e, Select):
            found = ()
        else:
            found = tuple(dict.fromkeys(g for c in e.children() for g in lane_guards(c, memo)))
        memo[id(e)] = found
    return found


def kept_operations(nodes: Sequence[ComputedBuffer]) -> set[int]:
    """The flagged operations (by ``id``) whose results reach a comparison or an arm of a select.
    LLVM answers some comparisons without computing the operation (``sqrt(x) != 0`` is ``x !=
    0``, ``x / 0.0 == 0`` is false, ``y * 2 > inf`` is false), and x86's AVX-512 instruction
    selection folds ``where(c, a / b, d)`` into a masked division, which raises no flag for the
    lanes ``c`` leaves out (NumPy divides every element, and warns): the flag the operation
    would have raised is never raised. A fast kernel that reads the flags keeps each such value
    alive, whole (``FloatEvents.keep``)."""
    found: set[int] = set()
    for node in nodes:
        for e in postorder(node.data.body):
            kids = e.children()[1:] if isinstance(e, Select) else \
                e.children() if _compares(e) else ()
            found.update(id(c) for kid in kids for c in _seen_through(kid)
                         if flagged(c) and events_of(c) is not None)
    return found


def fast_tests(nodes: Sequence[ComputedBuffer], spills: dict[str, list[str]],
               flags: bool = False) -> tuple[set[int], set[str]]:
    """The values (by ``id``) the fast kernel tests for being finite: those an event may have
    made infinite or NaN (``tainted``) where that could get lost downstream (an operand of a
    consumer not in ``PRESERVES``), or stored; and the float sums and products whose results it
    tests where they are stored (``accumulates_floats``; an accumulation keeps a non-finite
    value). A value a reduction also stores for a later phase (``spills``: reduction -> buffers,
    ``rowshare.py``) is not a store of its own: that phase reads it back and overwrites it, so
    the value's taint goes on through that load. With the CPU's ``flags`` read, the events of
    ``flagged`` operations and of the accumulations themselves need no test: only
    accumulations of tainted values do."""
    tainted: dict[int, bool] = {}
    carried: dict[str, bool] = {}  # spill buffer -> the spilled value is tainted
    tests: set[int] = set()
    totals: set[str] = set()
    for node in nodes:
        for e in postorder(node.data.body):
            if id(e) in tainted:
                continue
            kids = e.children()
            tainted[id(e)] = (events_of(e) is not None and not (flags and flagged(e)) and
                              not _operand_infinity(e) and not _tests_itself(e)) or any(
                tainted[id(c)] and _preserves(e, p) for p, c in enumerate(kids)) or (
                isinstance(e, Load | IndirectLoad) and carried.get(e.buffer, False))
            tests.update(id(c) for p, c in enumerate(kids)
                         if tainted[id(c)] and not _preserves(e, p))
        root = node.data.body
        for buffer in spills.get(node.name, ()):
            carried[buffer] = carried.get(buffer, False) or tainted[id(root)]
        if accumulates_floats(node):
            if tainted[id(root)] or not flags:
                totals.add(node.name)
        elif tainted[id(root)] and isinstance(node.data, Pointwise | Reduction):
            tests.add(id(root))
    return tests, totals


# -- the CPU's exception flags in LLVM IR (fast kernels, ``fpchecks.py``; BLAS calls of the
#    machine-code entry, ``entry_blas.py``) -----------------------------------------------------

def read_mxcsr(b: ir.IRBuilder, slot: ir.Value) -> ir.Value:
    """MXCSR, stored into the i32 ``slot`` and loaded."""
    stmxcsr = b.module.declare_intrinsic("llvm.x86.sse.stmxcsr", (),
                                         ir.FunctionType(ir.VoidType(), [I8P]))
    b.call(stmxcsr, [b.bitcast(slot, I8P)])
    return b.load(slot)


def clear_mxcsr_flags(b: ir.IRBuilder, slot: ir.Value) -> None:
    """MXCSR as ``slot`` holds it (``read_mxcsr``) with its exception flags cleared, loaded."""
    ldmxcsr = b.module.declare_intrinsic("llvm.x86.sse.ldmxcsr", (),
                                         ir.FunctionType(ir.VoidType(), [I8P]))
    b.store(b.and_(b.load(slot), ir.Constant(I32, ~MXCSR_FLAGS)), slot)
    b.call(ldmxcsr, [b.bitcast(slot, I8P)])


def flag_bits(b: ir.IRBuilder, mxcsr: ir.Value,
              table: tuple[tuple[int, int], ...] = MXCSR_CATEGORIES) -> ir.Value:
    """NumPy's status bits for the flags of ``mxcsr`` that ``table`` maps (flag, bit)."""
    bits: ir.Value | None = None
    for flag, bit in table:
        got = b.icmp_unsigned("!=", b.and_(mxcsr, ir.Constant(I32, flag)), ir.Constant(I32, 0))
        one = b.select(got, ir.Constant(I32, bit), ir.Constant(I32, 0))
        bits = one if bits is None else b.or_(bits, one)
    return bits if bits is not None else ir.Constant(I32, 0)
